// The controller is built by its own issue; this workspace holds its sources and tests.
export {};
