// Label values are at most 63 characters of [A-Za-z0-9_.-], starting and ending alphanumeric.
// Owner names may be longer (up to 253): those are shortened with a hash so the label stays
// valid and still tells owners apart.

import { createHash } from 'node:crypto';

const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/;
export const MAX_LABEL_VALUE = 63;

export function isLabelValue(value: string): boolean {
  return value.length <= MAX_LABEL_VALUE && LABEL_VALUE.test(value);
}

export function labelValue(value: string): string {
  if (isLabelValue(value)) return value;
  const hash = createHash('sha256').update(value).digest('hex').slice(0, 10);
  const head = value
    .replace(/[^-A-Za-z0-9_.]/g, '-')
    .slice(0, MAX_LABEL_VALUE - hash.length - 1)
    .replace(/^[^A-Za-z0-9]+/, '')
    .replace(/[^A-Za-z0-9]+$/, '');
  return head === '' ? hash : `${head}-${hash}`;
}
