/**
 * When Oxigraph's in-memory store pauses to grow. It keeps every quad it was given, deleted ones
 * too, in hash tables that double once they are 7/8 full; each doubling rehashes what they hold on
 * the thread that inserts, for a time in proportion to it. Measured on a bare store
 * (`scripts/bench/oxigraph-growth.ts`): the pauses come at 7/8 of a power of two quads loaded,
 * 0.15 s at 0.46 million, 0.7 s at 1.8 million, 1.4 s at 3.7 million. The JavaScript API gives no
 * way to size the tables ahead, but quads loaded and dropped at once grow them just the same.
 */

/** The smallest number of quads loaded, above `loaded`, at which the tables grow. */
export function nextGrowthPoint(loaded: number): number {
  let slots = 16;
  while ((slots * 7) / 8 <= loaded) slots *= 2;
  return (slots * 7) / 8;
}

/** Growth points from which the pause is long enough to matter to freshness (~0.5 s and more, measured: 0.7 s at 1.8 million). */
export const LONG_GROWTH_FROM = 1_500_000;
