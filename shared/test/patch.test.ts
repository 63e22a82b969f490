import { addToList, addToMap, escapeToken, isLabelValue, labelValue, pointer } from '../src';

describe('JSON pointers', () => {
  it('escape ~ before / (RFC 6901)', () => {
    expect(escapeToken('a/b')).toBe('a~1b');
    expect(escapeToken('a~b')).toBe('a~0b');
    expect(escapeToken('~/')).toBe('~0~1');
    expect(escapeToken('~1')).toBe('~01');
    expect(pointer(['metadata', 'labels', 'outrigger.dev/revision'])).toBe(
      '/metadata/labels/outrigger.dev~1revision',
    );
  });
});

describe('additive patch builders', () => {
  it('create a missing map whole, else add single keys', () => {
    expect(addToMap(['metadata', 'labels'], undefined, { a: '1' })).toEqual([
      { op: 'add', path: '/metadata/labels', value: { a: '1' } },
    ]);
    expect(addToMap(['metadata', 'labels'], { x: 'y' }, { 'k/1': '1' })).toEqual([
      { op: 'add', path: '/metadata/labels/k~11', value: '1' },
    ]);
    expect(addToMap(['m'], {}, {})).toEqual([]);
  });

  it('create a missing list whole, else insert at the front in order or append', () => {
    expect(addToList(['spec', 'volumes'], undefined, [1, 2], 'back')).toEqual([
      { op: 'add', path: '/spec/volumes', value: [1, 2] },
    ]);
    expect(addToList(['l'], [9], [1, 2], 'front')).toEqual([
      { op: 'add', path: '/l/0', value: 1 },
      { op: 'add', path: '/l/1', value: 2 },
    ]);
    expect(addToList(['l'], [9], [1], 'back')).toEqual([{ op: 'add', path: '/l/-', value: 1 }]);
  });
});

describe('label values', () => {
  it('keeps valid values and shortens the rest with a hash', () => {
    expect(labelValue('web')).toBe('web');
    const long = 'x'.repeat(100);
    expect(labelValue(long)).toHaveLength(63);
    expect(isLabelValue(labelValue(long))).toBe(true);
    expect(labelValue(long)).not.toBe(labelValue(`${long}y`));
    expect(isLabelValue(labelValue('my.app.example.com'))).toBe(true);
    expect(isLabelValue(labelValue('-.-'))).toBe(true);
  });
});
