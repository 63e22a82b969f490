import { median } from '../src';

describe('median', () => {
  it('is the middle value of an odd count, in any order', () => {
    expect(median([5, 1, 3])).toBe(3);
  });

  it('is the mean of the two middle values of an even count', () => {
    expect(median([4, 1, 3, 2])).toBe(2.5);
  });

  it('leaves its input as it was', () => {
    const values = [3, 1, 2];
    median(values);
    expect(values).toEqual([3, 1, 2]);
  });

  it('is NaN for no values', () => {
    expect(median([])).toBeNaN();
  });
});
