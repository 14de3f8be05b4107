const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
const MONTH = `(${MONTHS.join('|')})`;
const DAY = '(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun)';
const TIME = '([0-9]{2}):([0-9]{2}):([0-9]{2})';
const IMF_FIXDATE = new RegExp(`^${DAY}, ([0-9]{2}) ${MONTH} ([0-9]{4}) ${TIME} GMT$`);
const LONG_DAY = '(?:Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)';
const RFC850_DATE = new RegExp(`^${LONG_DAY}, ([0-9]{2})-${MONTH}-([0-9]{2}) ${TIME} GMT$`);
const ASCTIME_DATE = new RegExp(`^${DAY} ${MONTH} ([0-9 ][0-9]) ${TIME} ([0-9]{4})$`);

/** The instant in ms, or undefined for a date that does not exist (31 Feb, 24:00: `Date.UTC` would roll them over). */
function utc(year: number, month: string, day: number, time: readonly string[]): number | undefined {
  const [hours, minutes, seconds] = time.map(Number);
  const instant = Date.UTC(year, MONTHS.indexOf(month), day, hours, minutes, seconds);
  const d = new Date(instant);
  const fields = [d.getUTCFullYear(), d.getUTCDate(), d.getUTCHours(), d.getUTCMinutes(), d.getUTCSeconds()];
  return fields.join() === [year, day, hours, minutes, seconds].join() ? instant : undefined;
}

/** RFC 9110 5.6.7: a two-digit year more than 50 years ahead is the latest past year with those digits. */
function fullYear(twoDigits: number, now: Date): number {
  const year = now.getUTCFullYear() - (now.getUTCFullYear() % 100) + twoDigits;
  return year > now.getUTCFullYear() + 50 ? year - 100 : year;
}

/**
 * An HTTP-date (RFC 9110 5.6.7) in ms since the epoch: IMF-fixdate and the two obsolete forms a
 * recipient must also read (RFC 850, asctime); undefined when `text` is none of them.
 */
export function parseHttpDate(text: string, now = new Date()): number | undefined {
  const value = text.trim();
  let m = IMF_FIXDATE.exec(value);
  if (m) return utc(Number(m[3]), m[2], Number(m[1]), m.slice(4, 7));
  m = ASCTIME_DATE.exec(value);
  if (m) return utc(Number(m[6]), m[1], Number(m[2]), m.slice(3, 6));
  m = RFC850_DATE.exec(value);
  return m ? utc(fullYear(Number(m[3]), now), m[2], Number(m[1]), m.slice(4, 7)) : undefined;
}
