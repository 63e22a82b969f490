import { quantile } from '../src';

describe('quantile', () => {
  const hundred = Array.from({ length: 100 }, (_, i) => 100 - i); // 100 down to 1

  it('is the nearest-rank value: p50 and p99 of 1 to 100 are 50 and 99', () => {
    expect(quantile(hundred, 0.5)).toBe(50);
    expect(quantile(hundred, 0.99)).toBe(99);
  });

  it('is the smallest value at 0 and the largest at 1', () => {
    expect(quantile(hundred, 0)).toBe(1);
    expect(quantile(hundred, 1)).toBe(100);
  });

  it('is always a value of the sample, never one between two', () => {
    expect(quantile([10, 20], 0.5)).toBe(10);
    expect(quantile([10, 20], 0.51)).toBe(20);
  });

  it('is NaN for no values', () => {
    expect(quantile([], 0.5)).toBeNaN();
  });

  it('refuses a quantile outside 0 to 1, naming it', () => {
    expect(() => quantile([1], 99)).toThrow('quantile 99 is not between 0 and 1');
    expect(() => quantile([1], Number.NaN)).toThrow(RangeError);
  });
});
