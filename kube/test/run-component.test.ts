import {
  ABORTED_START_GRACE_MS,
  runComponent,
  silentLogger,
  type Component,
  type Stoppable,
} from '../src';

interface Flags {
  name: string;
}

/** A component whose start resolves when the test says so, and records its shutdown. */
function component(
  start: (signal: AbortSignal) => Promise<Stoppable>,
): Component<Flags, Stoppable> {
  return {
    name: 'outrigger-test',
    usage: 'Usage: outrigger-test [--name N]',
    parse: (argv) => ({ name: argv[1] ?? 'x' }),
    logger: () => silentLogger(),
    start: (_flags, _logger, signal) => start(signal),
  };
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function stoppable(): Stoppable & { shutdowns: number } {
  const c = {
    shutdowns: 0,
    shutdown: () => {
      c.shutdowns++;
      return Promise.resolve();
    },
  };
  return c;
}

describe('runComponent', () => {
  let write: jest.SpyInstance;
  let before: Map<string, NodeJS.SignalsListener[]>;
  /** Removes the signal handlers the component under test added, and only those. */
  const removeAddedHandlers = (): void => {
    for (const signal of ['SIGTERM', 'SIGINT'] as const)
      for (const handler of process.listeners(signal))
        if (!before.get(signal)?.includes(handler)) process.removeListener(signal, handler);
  };
  beforeEach(() => {
    write = jest.spyOn(process.stdout, 'write').mockImplementation(() => true);
    before = new Map(
      (['SIGTERM', 'SIGINT'] as const).map((signal) => [signal, [...process.listeners(signal)]]),
    );
  });
  afterEach(() => {
    jest.useRealTimers();
    write.mockRestore();
    removeAddedHandlers();
  });

  it('runs until a stop signal, then shuts the component down and exits 0', async () => {
    const c = stoppable();
    const exit = runComponent(
      component(() => Promise.resolve(c)),
      [],
    );
    await tick();
    expect(c.shutdowns).toBe(0);
    process.emit('SIGTERM', 'SIGTERM');
    await expect(exit).resolves.toBe(0);
    expect(c.shutdowns).toBe(1);
  });

  it('exits 0 on a signal during a start that never ends, and aborts that start', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    let aborted: AbortSignal | undefined;
    const exit = runComponent(
      component((signal) => {
        aborted = signal;
        return new Promise<Stoppable>(() => undefined);
      }),
      [],
    );
    await tick();
    process.emit('SIGINT', 'SIGINT');
    expect(aborted?.aborted).toBe(true);
    await jest.advanceTimersByTimeAsync(ABORTED_START_GRACE_MS);
    await expect(exit).resolves.toBe(0);
  });

  it('shuts down a component whose aborted start ends a moment after the signal', async () => {
    const c = stoppable();
    const exit = runComponent(
      component(
        (signal) =>
          new Promise<Stoppable>((resolve) =>
            signal.addEventListener('abort', () => setImmediate(() => resolve(c))),
          ),
      ),
      [],
    );
    await tick();
    process.emit('SIGTERM', 'SIGTERM');
    await expect(exit).resolves.toBe(0);
    expect(c.shutdowns).toBe(1);
  });

  it('shuts down a component whose start ends just after the signal', async () => {
    const c = stoppable();
    let finish: (value: Stoppable) => void = () => undefined;
    const exit = runComponent(
      component(() => new Promise<Stoppable>((resolve) => (finish = resolve))),
      [],
    );
    await tick();
    // The signal and the end of the start in the same turn: the start is seen first.
    finish(c);
    process.emit('SIGTERM', 'SIGTERM');
    await expect(exit).resolves.toBe(0);
    expect(c.shutdowns).toBe(1);
  });

  it('exits 1 when the start fails, 0 when it failed because a signal aborted it', async () => {
    await expect(
      runComponent(
        component(() => Promise.reject(new Error('no API server'))),
        [],
      ),
    ).resolves.toBe(1);
    removeAddedHandlers();
    const exit = runComponent(
      component(
        (signal) =>
          new Promise<Stoppable>((_resolve, reject) =>
            signal.addEventListener('abort', () => reject(new Error('aborted'))),
          ),
      ),
      [],
    );
    await tick();
    process.emit('SIGTERM', 'SIGTERM');
    await expect(exit).resolves.toBe(0);
  });

  it('prints the usage on --help and exits 0 without starting', async () => {
    const start = jest.fn(() => Promise.resolve(stoppable()));
    await expect(runComponent(component(start), ['--help'])).resolves.toBe(0);
    expect(start).not.toHaveBeenCalled();
    expect(write).toHaveBeenCalledWith('Usage: outrigger-test [--name N]\n');
  });
});
