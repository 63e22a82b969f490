// FilePoller: calls onChange once per new content (not on every poll), and onError when a
// file cannot be read or its listener fails, then resumes.

import { mkdtemp, rm, unlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { waitFor } from '@outrigger/testkit';
import { FilePoller } from '../src';

let dir: string;

beforeEach(async () => {
  dir = await mkdtemp(path.join(tmpdir(), 'outrigger-poll-'));
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe('FilePoller', () => {
  it('reports the contents on start and again only when they change', async () => {
    const a = path.join(dir, 'a');
    const b = path.join(dir, 'b');
    await writeFile(a, 'one');
    await writeFile(b, 'two');
    const changes: string[][] = [];
    const errors: Error[] = [];
    const poller = new FilePoller(
      [a, b],
      (c) => changes.push(c),
      (e) => errors.push(e),
      60_000,
    );
    await poller.start();
    expect(changes).toEqual([['one', 'two']]);
    await poller.poll();
    expect(changes).toHaveLength(1);
    await writeFile(b, 'three');
    await poller.poll();
    expect(changes).toEqual([
      ['one', 'two'],
      ['one', 'three'],
    ]);
    poller.stop();
    expect(errors).toEqual([]);
  });

  it('reports a failure of its listener to onError, and keeps polling', async () => {
    // The listener's throw became a rejection of a poll nobody awaited, which ends the process.
    const a = path.join(dir, 'a');
    await writeFile(a, 'bad');
    const errors: string[] = [];
    const changes: string[][] = [];
    const poller = new FilePoller(
      [a],
      (c) => {
        if (c[0] === 'bad') throw new Error('refused');
        changes.push(c);
      },
      (e) => errors.push(e.message),
      60_000,
    );
    await poller.start();
    expect(errors).toEqual(['refused']);
    await writeFile(a, 'good');
    await poller.poll();
    expect(changes).toEqual([['good']]);
    poller.stop();
  });

  it('calls onError while a file is missing and recovers when it is back', async () => {
    const a = path.join(dir, 'a');
    await writeFile(a, 'one');
    const changes: string[][] = [];
    const errors: Error[] = [];
    const poller = new FilePoller(
      [a],
      (c) => changes.push(c),
      (e) => errors.push(e),
      60_000,
    );
    await poller.start();
    await unlink(a);
    await poller.poll();
    expect(errors).toHaveLength(1);
    expect((errors[0] as NodeJS.ErrnoException).code).toBe('ENOENT');
    expect(changes).toEqual([['one']]);
    await writeFile(a, 'two');
    await poller.poll();
    expect(changes).toEqual([['one'], ['two']]);
    poller.stop();
  });

  it('keeps polling on its interval', async () => {
    const a = path.join(dir, 'a');
    await writeFile(a, 'one');
    let seen = '';
    const poller = new FilePoller(
      [a],
      (c) => (seen = c[0] ?? ''),
      () => undefined,
      20,
    );
    await poller.start();
    await writeFile(a, 'two');
    // Nothing but the poller's own interval reads the file again.
    await waitFor('the poller to read the new content', () => seen === 'two');
    poller.stop();
    expect(seen).toBe('two');
  });
});
