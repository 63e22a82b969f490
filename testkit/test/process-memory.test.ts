import { rssMiB, rssSplitMiB } from '../src';

describe("a process's memory", () => {
  it('is read from /proc: this process has resident memory, most of it anonymous or file-backed', () => {
    const rss = rssMiB(process.pid);
    const { anon, file } = rssSplitMiB(process.pid);
    expect(rss).toBeGreaterThan(10);
    expect(Math.abs(anon + file - rss)).toBeLessThan(rss * 0.2 + 2);
  });
});
