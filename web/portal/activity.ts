import { announce, h, replace } from '../lib/dom.ts';
import { when, words } from '../lib/format.ts';
import { ApiError } from '../lib/http.ts';
import { plainError } from './plain.ts';
import { authHeader, userApi, vendorName } from './session.ts';

interface AuditRecord {
  id: string;
  timestamp: string;
  vendor_id?: string;
  attribute_name: string;
  operation: 'READ' | 'UPDATE' | 'DELETE';
  result: 'SUCCESS' | 'DENIED' | 'ERROR';
  ip_address: string;
}

function list(names: string[]): string {
  const w = [...new Set(names)].map((n) => (n === '*' ? 'whole account' : `${words(n)}`));
  if (w.length <= 1) return w.join('');
  return `${w.slice(0, -1).join(', ')} and ${w.at(-1)}`;
}

/** The audit name of a palm change or a refused attempt on the user's palm (docs/security.md). */
const PALM = 'palm_registered';

/**
 * Whether a record is a change to the user's palms (or a refused attempt at one). Reading the
 * `palm_registered` attribute (which hands are registered) is an ordinary read: the user's own page load
 * does that, and it must not read as "a palm was registered".
 */
function isPalmChange(r: AuditRecord): boolean {
  return r.attribute_name === PALM && r.operation !== 'READ';
}

/** A palm change in words: who registered or removed a palm, or who tried and was refused. */
function palmSentence(r: AuditRecord): string {
  const who = r.vendor_id ? vendorName(r.vendor_id) : 'A kiosk';
  if (r.operation === 'DELETE') {
    if (r.result !== 'SUCCESS') return 'Removing a palm from your account failed';
    return r.vendor_id ? `${who} removed a palm from your account` : 'You removed a palm from your account';
  }
  if (r.result === 'SUCCESS')
    return r.vendor_id
      ? `${who} registered a palm to your account`
      : 'A palm was registered to your account at a kiosk';
  return `${who} tried to register a palm involving your account without your confirmation and was refused`;
}

const AGE_CHECK = /^age_over_(\d+)$/;

/**
 * An age check discloses yes or no, never the birth date (the server audits `age_over_N`): said as what
 * the vendor learned, "Demo Shop checked whether you are over 18 (yes or no only; …)".
 */
function ageSentence(who: string, r: AuditRecord, ages: string[], rest: string): string {
  const over = [...new Set(ages.map((n) => AGE_CHECK.exec(n)![1]))].join(' and ');
  if (r.result === 'DENIED')
    return `${who} asked whether you are over ${over} and was refused (no permission)`;
  if (r.result === 'ERROR') return `${who} tried to check whether you are over ${over}, which failed`;
  const check = `checked whether you are over ${over} (yes or no only; your date of birth was not shared)`;
  return rest ? `${who} read ${rest} and ${check}` : `${who} ${check}`;
}

/** One audit group as a sentence: "Cafe X read your email and phone number". */
export function sentence(r: AuditRecord, names: string[]): string {
  if (isPalmChange(r)) return palmSentence(r);
  const ages = names.filter((n) => AGE_CHECK.test(n));
  if (r.vendor_id && ages.length > 0 && r.operation === 'READ') {
    const others = names.filter((n) => !AGE_CHECK.test(n));
    return ageSentence(vendorName(r.vendor_id), r, ages, others.length ? `your ${list(others)}` : '');
  }
  const unique = new Set(names);
  const what = unique.has('*')
    ? 'your whole account'
    : unique.size > 4
      ? `your details (${unique.size} items)`
      : `your ${list(names)}`;
  if (r.vendor_id) {
    const who = vendorName(r.vendor_id);
    if (r.result === 'DENIED') return `${who} asked for ${what} and was refused (no permission)`;
    if (r.result === 'ERROR') return `${who} tried to use ${what}, which failed`;
    if (r.operation === 'READ') return `${who} read ${what}`;
    if (r.operation === 'UPDATE') return `${who} updated ${what}`;
    return `${who} deleted ${what}`;
  }
  if (r.result !== 'SUCCESS') return `A change to ${what} was rejected`;
  if (r.operation === 'READ') return `You viewed ${what}`;
  if (r.operation === 'UPDATE') return `You changed ${what}`;
  return names.includes('*') ? 'You erased your account' : `You deleted ${what}`;
}

/** The user's own successful reads within this long of each other are one visit. */
const VISIT_MS = 30 * 60_000;

/** The user reading their own details (each page load reads every attribute, one record each). */
function isOwnRead(r: AuditRecord): boolean {
  return !r.vendor_id && r.operation === 'READ' && r.result === 'SUCCESS';
}

interface Group {
  first: AuditRecord;
  names: string[];
  /** For the user's own reads: the oldest record of the visit (records come newest first). */
  last?: AuditRecord;
  /** For the user's own reads: how many separate moments (page loads, refreshes) the visit holds. */
  moments?: number;
}

/**
 * Records written in the same moment by the same caller for the same operation read as one event; the
 * user's own reads go further: every read of theirs within half an hour of the previous one is one
 * "You viewed your details" line, however many page loads and refreshes it took.
 */
export function group(records: AuditRecord[]): Group[] {
  const groups: Group[] = [];
  for (const r of records) {
    const last = groups.at(-1);
    if (last && isOwnRead(r) && isOwnRead(last.first)) {
      const prev = last.last ?? last.first;
      if (Date.parse(prev.timestamp) - Date.parse(r.timestamp) <= VISIT_MS) {
        last.names.push(r.attribute_name);
        if (prev.timestamp !== r.timestamp) last.moments = (last.moments ?? 1) + 1;
        last.last = r;
        continue;
      }
    }
    if (
      last &&
      !isPalmChange(r) &&
      !isPalmChange(last.first) &&
      last.first.timestamp === r.timestamp &&
      last.first.vendor_id === r.vendor_id &&
      last.first.operation === r.operation &&
      last.first.result === r.result
    ) {
      last.names.push(r.attribute_name);
    } else groups.push({ first: r, names: [r.attribute_name] });
  }
  return groups;
}

/** "You viewed your details (13 items) 3 times between 10:02 and 10:20": one line per visit. */
function ownReadLine(g: Group) {
  const unique = new Set(g.names);
  const what = unique.size > 4 ? `your details (${unique.size} items)` : `your ${list(g.names)}`;
  const times = g.moments && g.moments > 1 ? ` ${g.moments} times` : '';
  if (g.last && g.last.timestamp !== g.first.timestamp)
    return [
      `You viewed ${what}${times} between `,
      h('time', { datetime: g.last.timestamp }, when(g.last.timestamp)),
      ' and ',
      h('time', { datetime: g.first.timestamp }, when(g.first.timestamp)),
      '.',
    ];
  return [`You viewed ${what} on `, h('time', { datetime: g.first.timestamp }, when(g.first.timestamp)), '.'];
}

export async function renderAudit(): Promise<void> {
  const { data } = await userApi<{ records: AuditRecord[] }>('/v1/audit?limit=300');
  const box = document.getElementById('audit')!;
  const groups = group(data.records).slice(0, 60);
  if (groups.length === 0) {
    replace(box, h('li', { class: 'muted' }, 'Nothing yet.'));
    return;
  }
  replace(
    box,
    groups.map((g) => {
      const { first, names } = g;
      return h(
        'li',
        { class: first.result === 'SUCCESS' ? '' : 'audit-denied', 'data-vendor': first.vendor_id ?? '' },
        h(
          'p',
          { class: 'sentence' },
          ...(isOwnRead(first)
            ? ownReadLine(g)
            : [
                `${sentence(first, names)} on `,
                h('time', { datetime: first.timestamp }, when(first.timestamp)),
                '.',
              ]),
        ),
      );
    }),
  );
}

function filenameOf(response: Response): string {
  const cd = response.headers.get('Content-Disposition') ?? '';
  const m = /filename="([^"]+)"/.exec(cd);
  return m?.[1] ?? 'palmid-export.json';
}

/** The export is fetched with the bearer token (a plain link could not send it) and saved as a file. */
export async function downloadExport(): Promise<void> {
  const status = document.getElementById('data-status')!;
  status.textContent = 'Preparing your data…';
  try {
    const response = await fetch('/v1/gdpr/export', {
      headers: { ...authHeader(), Accept: 'application/json' },
      credentials: 'omit',
      cache: 'no-store',
    });
    if (!response.ok) {
      const body = (await response.json().catch(() => undefined)) as
        | { error?: { message?: string } }
        | undefined;
      throw new ApiError(response.status, 'EXPORT', body?.error?.message ?? 'The export failed.');
    }
    const blob = await response.blob();
    const url = URL.createObjectURL(blob);
    const a = h('a', { href: url, download: filenameOf(response), hidden: true });
    document.body.append(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    status.textContent = `Downloaded ${filenameOf(response)} (${Math.max(1, Math.round(blob.size / 1024))} KB).`;
    announce(status.textContent);
  } catch (err) {
    status.textContent = plainError(err, 'The export failed. Try again.');
  }
}

/** A one-time code that lets a kiosk or the user's vendor add a palm (docs/security.md). */
export async function showPalmCode(): Promise<void> {
  const status = document.getElementById('palm-status')!;
  const { data } = await userApi<{ confirmation_code: string; expires_at: string }>('/v1/palms/confirm', {
    method: 'POST',
  });
  status.textContent = `Your code: ${data.confirmation_code} (valid until ${when(data.expires_at)}, once).`;
  announce(status.textContent);
}
