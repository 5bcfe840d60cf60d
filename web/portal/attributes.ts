import { CATALOGUE, type CatalogueEntry } from '@palmid/contracts/api/attribute-catalogue';
import type { AttributeItem } from '@palmid/contracts/api/attributes';
import { announce, h, replace, setFieldError } from '../lib/dom.ts';
import { day, valueText, when, words } from '../lib/format.ts';
import { plainError } from './plain.ts';
import { userApi, vendorName } from './session.ts';

const ENTRIES = CATALOGUE as Record<string, CatalogueEntry>;
const EDITABLE = Object.entries(ENTRIES)
  .filter(([, e]) => e.kind === 'user')
  .map(([name]) => name);

const LABELS: Record<string, string> = {
  email: 'Email',
  phone: 'Phone number',
  date_of_birth: 'Date of birth',
  postal_code: 'Postal code',
  country: 'Country',
  name: 'Name',
  promotion_eligible: 'Vendor promotions',
};
const HINTS: Record<string, string> = {
  phone: 'With the country code, e.g. +49 151 1234 5678 (spaces are fine).',
  country: 'Two-letter code, e.g. DE, FR, GB.',
  postal_code: 'Checked against your country when you have set one.',
  promotion_eligible: 'Whether shops may offer you promotions.',
};

/** What a value palmid keeps or works out means, beside the value (docs/attributes.md). */
const NOTES: Record<string, string> = {
  risk_score:
    'from 0 (low) to 1 (high): the share of your palm checks in the last 90 days that failed, 0.4 before there is any history, raised by failures in the last day. palmid does not act on it; a shop sees it only if you allow it',
  loyalty_tier: 'worked out from how often you paid with your palm in the last year',
  is_adult: 'worked out from your date of birth; a shop you allow sees yes or no only',
  is_senior: 'worked out from your date of birth; a shop you allow sees yes or no only',
  palm_registered: 'which hands are registered to your account',
  registration_date: 'when your account was created',
  last_auth: 'your last successful palm check',
};

export function label(name: string): string {
  return LABELS[name] ?? name.charAt(0).toUpperCase() + words(name).slice(1);
}

function inputFor(name: string, item: AttributeItem | undefined): HTMLInputElement | HTMLSelectElement {
  const type = ENTRIES[name]?.type ?? 'text';
  const id = `attr-${name}`;
  const value = item && !item.encrypted ? item.value : undefined;
  const hint = HINTS[name] ? `${id}-hint` : undefined;
  if (type === 'boolean') {
    const select = h(
      'select',
      { id, name, 'aria-describedby': hint },
      h('option', { value: '', selected: value === undefined }, 'Not set'),
      h('option', { value: 'true', selected: value === true }, 'Yes'),
      h('option', { value: 'false', selected: value === false }, 'No'),
    );
    return select;
  }
  const inputType = type === 'email' ? 'email' : type === 'phone' ? 'tel' : type === 'date' ? 'date' : 'text';
  const autocomplete: Record<string, string> = {
    email: 'email',
    phone: 'tel',
    date_of_birth: 'bday',
    postal_code: 'postal-code',
    country: 'country',
    name: 'name',
  };
  return h('input', {
    id,
    name,
    type: inputType,
    value: value === undefined || value === null ? '' : String(value),
    autocomplete: autocomplete[name] ?? 'off',
    spellcheck: 'false',
    'aria-describedby': hint,
  });
}

function readValue(input: HTMLInputElement | HTMLSelectElement): unknown {
  if (input instanceof HTMLSelectElement) return input.value === '' ? '' : input.value === 'true';
  return input.value.trim();
}

function editForm(name: string, item: AttributeItem | undefined, reload: () => Promise<void>) {
  const input = inputFor(name, item);
  const hint = HINTS[name];
  const save = h('button', { type: 'submit', class: 'secondary' }, 'Save');
  const form = h(
    'form',
    { class: 'field inline', novalidate: true, 'data-attribute': name },
    h(
      'div',
      { class: 'grow field' },
      h('label', { for: input.id }, label(name)),
      hint ? h('p', { class: 'hint', id: `${input.id}-hint` }, hint) : null,
      input,
    ),
    save,
  );
  form.addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const value = readValue(input);
    save.disabled = true;
    try {
      if (value === '') {
        if (item) await userApi(`/v1/attributes/${name}`, { method: 'DELETE' });
      } else {
        await userApi(`/v1/attributes/${name}`, { method: 'PUT', body: { value } });
      }
      setFieldError(input, null);
      announce(`${label(name)} saved.`);
      await reload();
      document.getElementById(`attr-${name}`)?.focus();
      const box = document.querySelector(`form[data-attribute="${name}"]`);
      if (box) box.append(h('p', { class: 'form-status', 'data-kind': 'ok', role: 'status' }, 'Saved.'));
    } catch (err) {
      const message = plainError(err, 'Could not save. Try again.');
      setFieldError(input, message);
      input.focus();
    } finally {
      save.disabled = false;
    }
  });
  return form;
}

function factList(items: AttributeItem[], describe: (i: AttributeItem) => string | null) {
  if (items.length === 0) return h('p', { class: 'muted' }, 'Nothing yet.');
  return h(
    'dl',
    { class: 'facts' },
    items.flatMap((i) => {
      const note = describe(i);
      return [
        h('dt', {}, label(i.name)),
        h(
          'dd',
          { 'data-attribute': i.name },
          i.encrypted
            ? 'encrypted by you'
            : i.name === 'registration_date'
              ? day(String(i.value))
              : i.name === 'last_auth'
                ? i.value
                  ? when(String(i.value))
                  : 'never'
                : valueText(i.value),
          note ? h('span', { class: 'muted' }, ` — ${note}`) : null,
          i.status !== 'valid' ? h('span', { class: 'badge warn' }, i.status.replace(/_/g, ' ')) : null,
        ),
      ];
    }),
  );
}

/** Renders "Your details" (editable) and "Verified by others" / "Kept by palmid" (read-only). */
export async function renderAttributes(): Promise<AttributeItem[]> {
  const { data } = await userApi<{ attributes: AttributeItem[] }>('/v1/attributes');
  const byName = new Map(data.attributes.map((a) => [a.name, a]));
  const reload = async () => {
    await renderAttributes();
  };
  const extra = data.attributes
    .filter((a) => a.kind === 'user' && !EDITABLE.includes(a.name))
    .map((a) => a.name);
  replace(
    document.getElementById('user-attributes')!,
    [...EDITABLE, ...extra].map((name) => editForm(name, byName.get(name), reload)),
  );
  const verified = data.attributes.filter((a) => a.kind === 'verified');
  replace(
    document.getElementById('verified-attributes')!,
    factList(verified, (i) => (i.verified_by ? `verified by ${issuer(i.verified_by)}` : 'verified')),
  );
  const system = data.attributes.filter((a) => a.kind === 'system' || a.kind === 'computed');
  replace(
    document.getElementById('system-attributes')!,
    factList(
      system,
      (i) => NOTES[i.name] ?? (i.kind === 'computed' ? 'worked out from your other details' : null),
    ),
  );
  return data.attributes;
}

/** verified_by is a vendor id or the name of an identity provider. */
function issuer(by: string): string {
  return /^[0-9a-f-]{36}$/i.test(by) ? vendorName(by) : by;
}
