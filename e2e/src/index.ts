// The end-to-end harness lives here (issue 3).
export {};
