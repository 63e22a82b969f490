// The shared body budget under any sequence of requests, releases and withdrawals from a few
// clients: it never holds more than it has (but for one body larger than all of it, alone),
// each client's requests are granted in the order asked, the client holding least (with what it asks) goes first and
// nothing that could go next is left waiting, and once everything granted is given back every request still waiting gets in.

import fc from 'fast-check';
import { BodyBudget } from '../src/body';

const TOTAL = 100;

type Step =
  | { op: 'reserve'; client: string; bytes: number }
  | { op: 'release'; pick: number }
  | { op: 'cancel'; pick: number };

const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({
    op: fc.constant('reserve' as const),
    client: fc.constantFrom('a', 'b', 'c'),
    bytes: fc.integer({ min: 1, max: 130 }),
  }),
  fc.record({ op: fc.constant('release' as const), pick: fc.nat() }),
  fc.record({ op: fc.constant('cancel' as const), pick: fc.nat() }),
);

interface Asked {
  n: number;
  client: string;
  bytes: number;
  granted: boolean;
  released: boolean;
  cancelled: boolean;
  cancel: () => void;
}

/**
 * The request the budget's rule grants next: the oldest request of the client whose holding plus
 * that request is least (the oldest such on a tie).
 */
function nextInTurn(waiting: Asked[], held: Asked[]): Asked | undefined {
  const holds = (client: string): number =>
    held.filter((a) => a.client === client).reduce((sum, a) => sum + a.bytes, 0);
  const weight = (a: Asked): number => holds(a.client) + a.bytes;
  const oldest = waiting.filter((a, i) => waiting.findIndex((b) => b.client === a.client) === i);
  return oldest.reduce<Asked | undefined>(
    (best, a) => (best === undefined || weight(a) < weight(best) ? a : best),
    undefined,
  );
}

/** Lets granted promises settle. */
const settle = (): Promise<void> => new Promise((r) => setImmediate(r));

it('keeps its bounds, each client’s order, and its liveness under any sequence', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(step, { maxLength: 60 }), async (steps) => {
      const budget = new BodyBudget(TOTAL);
      const asked: Asked[] = [];
      const grantOrder: number[] = [];
      const held = (): Asked[] => asked.filter((a) => a.granted && !a.released);
      const waiting = (): Asked[] => asked.filter((a) => !a.granted && !a.cancelled);
      for (const s of steps) {
        if (s.op === 'reserve') {
          const ticket = budget.reserve(s.bytes, s.client);
          const a: Asked = {
            n: asked.length,
            client: s.client,
            bytes: s.bytes,
            granted: false,
            released: false,
            cancelled: false,
            cancel: ticket.cancel,
          };
          asked.push(a);
          void ticket.granted.then(() => {
            a.granted = true;
            grantOrder.push(a.n);
          });
        } else if (s.op === 'release') {
          const h = held();
          const a = h[s.pick % Math.max(1, h.length)];
          if (a) {
            a.released = true;
            budget.release(a.bytes, a.client);
          }
        } else {
          const w = waiting();
          const a = w[s.pick % Math.max(1, w.length)];
          if (a) {
            a.cancelled = true;
            a.cancel();
          }
        }
        await settle();
        const inUse = held().reduce((sum, a) => sum + a.bytes, 0);
        expect(budget.inUse).toBe(inUse);
        expect(inUse <= TOTAL || held().length === 1).toBe(true);
        expect(budget.waitingCount).toBe(waiting().length);
        // Nothing is left waiting that could go next: the oldest request of the client holding
        // least (the oldest such on a tie) does not fit.
        const next = nextInTurn(waiting(), held());
        if (next) expect(inUse > 0 && inUse + next.bytes > TOTAL).toBe(true);
      }
      // Each client's grants in the order it asked.
      for (const client of ['a', 'b', 'c']) {
        const order = grantOrder.filter((n) => asked[n]?.client === client);
        expect(order).toEqual([...order].sort((x, y) => x - y));
      }
      // Everything given back: every request still waiting is granted, in turn.
      for (let guard = 0; guard < 200 && (held().length > 0 || waiting().length > 0); guard++) {
        for (const a of held()) {
          a.released = true;
          budget.release(a.bytes, a.client);
        }
        await settle();
      }
      expect(waiting()).toEqual([]);
      expect(budget.inUse).toBe(0);
    }),
    { numRuns: 300 },
  );
});
