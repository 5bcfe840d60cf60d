/** Completed years between a `YYYY-MM-DD` birth date and a day (UTC), in calendar terms (leap days included). */
export function ageOnDate(dateOfBirth: string, on: Date): number {
  const m = /^(\d{4})-(\d{2})-(\d{2})$/.exec(dateOfBirth);
  if (!m) return Number.NaN;
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  let age = on.getUTCFullYear() - y;
  const month = on.getUTCMonth() + 1;
  if (month < mo || (month === mo && on.getUTCDate() < d)) age -= 1;
  return age;
}

export function ageAttributeName(minimumAge: number): string {
  return `age_over_${minimumAge}`;
}
