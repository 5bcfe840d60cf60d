/**
 * The size of a test campaign (crash kills, tamper cases, fuzz cases), from an environment variable or the
 * default that `npm test` runs (docs/testing.md lists them). A value that is not a whole number ≥ 1 is an
 * error, not a silent zero-case campaign.
 */
export function campaignSize(variable: string, fallback: number): number {
  const raw = process.env[variable];
  if (raw === undefined || raw === '') return fallback;
  const n = Number(raw);
  if (!Number.isInteger(n) || n < 1) throw new Error(`${variable}=${raw}: want a whole number ≥ 1`);
  return n;
}
