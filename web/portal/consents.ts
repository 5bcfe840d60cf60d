import type { AttributeItem } from '@palmid/contracts/api/attributes';
import { type Consent, createConsentBodySchema } from '@palmid/contracts/api/consents';
import { announce, formStatus, h, replace, setFieldError } from '../lib/dom.ts';
import { day, words } from '../lib/format.ts';
import { ApiError } from '../lib/http.ts';
import { label } from './attributes.ts';
import { plainError } from './plain.ts';
import { userApi, vendorName, vendors } from './session.ts';

function keepText(days: number): string {
  if (days === 0) return 'must not store it';
  if (days === 1) return 'may keep it for 1 day';
  return `may keep it for ${days} days`;
}

function consentCard(c: Consent, reload: () => Promise<void>) {
  const who = vendorName(c.vendor_id);
  const names = c.attributes.map((a) => words(a.name)).join(', ');
  const revoke =
    c.status === 'active' && c.revocable
      ? h(
          'button',
          { type: 'button', class: 'secondary', 'aria-label': `Revoke ${who}'s access to ${names}` },
          'Revoke',
        )
      : null;
  revoke?.addEventListener('click', async () => {
    revoke.disabled = true;
    try {
      await userApi(`/v1/consents/${c.consent_id}`, { method: 'DELETE' });
      announce(`${who} can no longer see your ${names}.`);
      await reload();
      document.getElementById('consents-title')?.focus();
    } catch (err) {
      revoke.disabled = false;
      formStatus(card, plainError(err, 'Could not revoke. Try again.'), 'error');
    }
  });
  const card = h(
    'li',
    { 'data-consent': c.consent_id, 'data-vendor': who },
    h(
      'p',
      { class: 'sentence' },
      h('strong', {}, who),
      c.status === 'active' ? ' may see:' : ' was allowed to see:',
      ' ',
      c.status !== 'active' ? h('span', { class: 'badge', 'data-status': c.status }, c.status) : null,
    ),
    h(
      'ul',
      { class: 'consent-attr' },
      c.attributes.map((a) =>
        h(
          'li',
          {},
          h('strong', {}, `your ${words(a.name)}`),
          ` — for “${a.purpose}”; ${keepText(a.retention_days)}`,
        ),
      ),
    ),
    h(
      'p',
      { class: 'muted' },
      `Given on ${day(c.granted_at)}`,
      c.revoked_at ? ` · revoked on ${day(c.revoked_at)}` : ` · ends on ${day(c.expires_at)}`,
      c.revocable ? '' : ' · cannot be revoked',
      c.audit_log ? ' · every access is logged' : '',
    ),
    revoke ? h('div', { class: 'actions' }, revoke) : null,
  );
  return card;
}

export async function renderConsents(): Promise<void> {
  const all = (document.getElementById('show-all-consents') as HTMLInputElement).checked;
  const { data } = await userApi<{ consents: Consent[] }>(`/v1/consents${all ? '?all=true' : ''}`);
  const box = document.getElementById('consents')!;
  if (data.consents.length === 0) {
    replace(box, h('p', { class: 'muted' }, 'No shop may see any of your details.'));
    return;
  }
  replace(
    box,
    h(
      'ul',
      { class: 'list', id: 'consent-list' },
      data.consents.map((c) => consentCard(c, renderConsents)),
    ),
  );
}

/** The grant form: vendors from the directory, attributes the user has or could have. */
export function fillGrantForm(attributes: AttributeItem[]): void {
  const select = document.getElementById('grant-vendor') as HTMLSelectElement;
  const chosen = select.value;
  replace(
    select,
    h('option', { value: '' }, 'Choose a shop…'),
    vendors().map((v) => h('option', { value: v.vendor_id, selected: v.vendor_id === chosen }, v.name)),
  );
  const names = attributes.filter((a) => a.kind !== 'system' || a.name === 'user_id').map((a) => a.name);
  replace(
    document.getElementById('grant-attributes')!,
    names.map((n) =>
      h(
        'label',
        {},
        h('input', { type: 'checkbox', name: 'attribute', value: n, id: `grant-attr-${n}` }),
        label(n),
      ),
    ),
  );
}

const FIELD_INPUTS: Record<string, string> = {
  vendor_id: 'grant-vendor',
  attributes: 'grant-attributes-set',
  purpose: 'grant-purpose',
  retention_days: 'grant-retention',
  expires_at: 'grant-expires',
};

function inputForField(field: string | undefined): HTMLElement | null {
  const key =
    field
      ?.split('.')
      .filter((p) => !/^\d+$/.test(p))
      .pop() ?? '';
  return document.getElementById(FIELD_INPUTS[key] ?? (key === 'name' ? 'grant-attributes-set' : ''));
}

export function wireGrantForm(): void {
  const form = document.getElementById('grant-form') as HTMLFormElement;
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    for (const id of Object.values(FIELD_INPUTS)) setFieldError(document.getElementById(id)!, null);
    const vendor = (document.getElementById('grant-vendor') as HTMLSelectElement).value;
    const purpose = (document.getElementById('grant-purpose') as HTMLInputElement).value.trim();
    const retention = Number((document.getElementById('grant-retention') as HTMLInputElement).value || '0');
    const expires = (document.getElementById('grant-expires') as HTMLInputElement).value;
    const picked = [...form.querySelectorAll<HTMLInputElement>('input[name="attribute"]:checked')].map(
      (i) => i.value,
    );
    const body = {
      vendor_id: vendor,
      attributes: picked.map((name) => ({ name, purpose, retention_days: retention })),
      ...(expires ? { expires_at: new Date(`${expires}T23:59:59`).toISOString() } : {}),
    };
    // The same schema the server validates with, so most mistakes are caught before a round trip.
    const checked = createConsentBodySchema.safeParse(body);
    if (!checked.success) {
      const issue = checked.error.issues[0]!;
      const field = issue.path.map(String).join('.');
      const friendly: Record<string, string> = {
        vendor_id: 'Choose a shop.',
        attributes: 'Choose at least one detail.',
        purpose: 'Say what the shop needs it for.',
      };
      const key =
        field
          .split('.')
          .filter((p) => !/^\d+$/.test(p))
          .pop() ?? '';
      const input = inputForField(field);
      if (input) {
        setFieldError(input, friendly[key] ?? issue.message);
        input.focus();
      }
      return;
    }
    try {
      await userApi('/v1/consents', { method: 'POST', body: checked.data });
      const who = vendors().find((v) => v.vendor_id === vendor)?.name ?? 'The shop';
      formStatus(form, `${who} may now see your ${picked.map(words).join(', ')}.`);
      announce(`${who} may now see your ${picked.map(words).join(', ')}.`);
      form.querySelectorAll<HTMLInputElement>('input[name="attribute"]').forEach((i) => {
        i.checked = false;
      });
      await renderConsents();
    } catch (err) {
      const input = err instanceof ApiError ? inputForField(err.field) : null;
      const message = plainError(err, 'Could not give access. Try again.');
      if (input) setFieldError(input, message);
      else formStatus(form, message, 'error');
    }
  });
  document.getElementById('show-all-consents')!.addEventListener('change', () => {
    renderConsents().catch((err: unknown) => {
      if (!(err instanceof ApiError && err.status === 401))
        formStatus(
          document.getElementById('consents')!,
          plainError(err, 'Could not load the permissions. Try again.'),
          'error',
        );
    });
  });
}
