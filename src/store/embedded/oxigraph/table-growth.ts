/**
 * When Oxigraph's in-memory store pauses to grow: its hash tables keep every quad it was given, deleted
 * ones too, and double once 7/8 full, rehashing on the inserting thread for a time in proportion to
 * what they hold (scripts/bench/oxigraph-growth.ts). Its JavaScript API cannot size them ahead, but
 * quads loaded and dropped at once grow them just the same.
 */

/** The smallest number of quads loaded, above `loaded`, at which the tables grow. */
export function nextGrowthPoint(loaded: number): number {
  let slots = 16;
  while ((slots * 7) / 8 <= loaded) slots *= 2;
  return (slots * 7) / 8;
}

/** Growth points from which the pause is long enough to matter to freshness. */
export const LONG_GROWTH_FROM = 1_500_000;
