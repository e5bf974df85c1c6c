import { describe, expect, it } from 'vitest';
import { RequestSlots, type ReleaseSlot } from '../../src/api/slots.js';

/** Lets queued microtasks (the hand-over of a slot) run. */
const settle = () => new Promise<void>((resolve) => setImmediate(resolve));

/** Takes a slot and records when it is granted. */
function taker(slots: RequestSlots, granted: string[]) {
  return (name: string, finishing = false): Promise<ReleaseSlot> =>
    slots.take(finishing).then((release) => {
      granted.push(name);
      return release;
    });
}

describe('RequestSlots', () => {
  it('has no limit until one is set', async () => {
    const slots = new RequestSlots();
    const granted: string[] = [];
    const take = taker(slots, granted);
    await Promise.all(Array.from({ length: 100 }, (_, i) => take(`r${i}`)));
    expect(granted).toHaveLength(100);
  });

  it('lets at most `limit` through at once, the rest in arrival order as slots free up', async () => {
    const slots = new RequestSlots();
    slots.limit(2);
    const granted: string[] = [];
    const take = taker(slots, granted);
    const a = take('a');
    const b = take('b');
    void take('c');
    void take('d');
    await settle();
    expect(granted).toEqual(['a', 'b']);
    (await a)();
    await settle();
    expect(granted).toEqual(['a', 'b', 'c']);
    (await b)();
    await settle();
    expect(granted).toEqual(['a', 'b', 'c', 'd']);
  });

  it('gives a free slot to a finishing request (forfait) before beginning ones that waited longer', async () => {
    const slots = new RequestSlots();
    slots.limit(1);
    const granted: string[] = [];
    const take = taker(slots, granted);
    const first = take('request-1');
    void take('request-2');
    void take('request-3');
    void take('forfait-1', true);
    await settle();
    (await first)();
    await settle();
    expect(granted).toEqual(['request-1', 'forfait-1']);
  });

  it('never lets a newcomer past requests already waiting', async () => {
    const slots = new RequestSlots();
    slots.limit(1);
    const granted: string[] = [];
    const take = taker(slots, granted);
    const first = take('a');
    void take('b');
    await settle();
    const release = await first;
    release();
    // "c" arrives in the same turn as the release, before "b" has run: it still queues behind "b".
    void take('c');
    await settle();
    expect(granted).toEqual(['a', 'b']);
  });

  it('counts a slot released twice only once', async () => {
    const slots = new RequestSlots();
    slots.limit(1);
    const granted: string[] = [];
    const take = taker(slots, granted);
    const release = await take('a');
    void take('b');
    void take('c');
    release();
    release();
    await settle();
    expect(granted).toEqual(['a', 'b']);
  });

  it('lets waiting requests through when the limit is raised', async () => {
    const slots = new RequestSlots();
    slots.limit(1);
    const granted: string[] = [];
    const take = taker(slots, granted);
    await take('a');
    void take('b');
    void take('c');
    await settle();
    expect(granted).toEqual(['a']);
    slots.limit(3);
    await settle();
    expect(granted).toEqual(['a', 'b', 'c']);
  });

  it.each([0, -1, 1.5, Number.NaN])('refuses a limit of %s', (limit) => {
    expect(() => new RequestSlots().limit(limit)).toThrow(RangeError);
  });
});
