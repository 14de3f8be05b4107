import { xsd } from '../../../rdf/vocab.js';
import { nextGrowthPoint } from '../oxigraph/table-growth.js';
import { iri } from './replica-lines.js';
import { LAYOUT } from './replica-layout.js';

/**
 * A serving replica is handed over to a fresh copy once its loaded quads reach this share of its next long growth
 * point, so queries never wait on its tables growing; the earlier, the longer the copy may take, and the sooner
 * after the last handover it comes (docs/sparql-replica.md, "Handover before the tables grow").
 */
export const HANDOVER_AT = 0.6;
/** A copy whose quads pass this share of its next long growth point grows its tables past it before it serves. */
const GROW_PAST_FROM = 0.5;
/**
 * How far past a growth point a copy's tables are grown, as a share of it: a copy grown just past the
 * point still paused soon after, as if one of its tables held fewer entries than quads.
 */
const GROWTH_MARGIN = 1 / 16;
/** Quads loaded at a time to grow the tables. */
const GROWTH_CHUNK = 20_000;

/**
 * The long growth point a replica that loaded `loadedQuads` is near (it should be handed over to a
 * new copy before it gets there), if any; none past `shortOfRoomFor`, which a copy could not grow past.
 */
export function handoverPoint(loadedQuads: number, longGrowthFrom: number, shortOfRoomFor: number): number | undefined {
  const point = nextGrowthPoint(loadedQuads);
  return point >= longGrowthFrom && point > shortOfRoomFor && loadedQuads >= HANDOVER_AT * point ? point : undefined;
}

/**
 * The point a new copy grows its tables past (its next long growth point when it loaded more than
 * half of it, or `handedOverFor`), and the quads that takes beside the `held` ones; undefined: none.
 */
export function growthTarget(
  loadedQuads: number,
  held: number,
  handedOverFor: number,
  longGrowthFrom: number,
): { point: number; quads: number } | undefined {
  const next = nextGrowthPoint(loadedQuads);
  const point = Math.max(handedOverFor, loadedQuads >= GROW_PAST_FROM * next ? next : 0);
  if (point < longGrowthFrom) return undefined;
  const past = Math.ceil(point * (1 + GROWTH_MARGIN));
  if (past < held) return undefined;
  return { point, quads: past + 1 - held };
}

const padding = iri(LAYOUT.padding);
/** A quad of the padding graph; integers are held in the quad itself: no string to store for them. */
export const paddingLine = (i: number) => `${padding} ${padding} "${i}"^^${iri(xsd.integer)} ${padding} .\n`;

/** `quads` lines of the padding graph, a chunk at a time. */
export function* paddingChunks(quads: number): Generator<string[]> {
  for (let done = 0; done < quads; done += GROWTH_CHUNK) {
    const lines: string[] = [];
    for (let i = done; i < Math.min(quads, done + GROWTH_CHUNK); i++) lines.push(paddingLine(i));
    yield lines;
  }
}
