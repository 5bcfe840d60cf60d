import type { PalmItem } from '@palmid/contracts/api/palms';
import { announce, h, replace } from '../lib/dom.ts';
import { when } from '../lib/format.ts';
import { ApiError } from '../lib/http.ts';
import { userApi } from './session.ts';

/** Where a palm was enrolled, in words. */
function whereText(p: PalmItem): string {
  if (p.where.kind === 'kiosk') return p.where.name ? `at the kiosk “${p.where.name}”` : 'at a kiosk';
  if (p.where.kind === 'vendor') return p.where.name ? `by ${p.where.name}` : 'by a shop';
  return 'place not recorded';
}

/**
 * The user's palms (`GET /v1/palms`), each with a remove button (`DELETE /v1/palms/{palm_id}`, audited):
 * a removed palm no longer identifies the user anywhere. docs/user-api.md, "Palms".
 */
export async function renderPalms(onChange: () => Promise<void> = async () => undefined): Promise<void> {
  const { data } = await userApi<{ palms: PalmItem[] }>('/v1/palms');
  const box = document.getElementById('palms')!;
  const status = document.getElementById('palm-status')!;
  if (data.palms.length === 0) {
    replace(box, h('li', { class: 'muted' }, 'No palm is registered to your account.'));
    return;
  }
  replace(
    box,
    data.palms.map((p) => {
      const hand = p.hand === 'left' ? 'Left palm' : 'Right palm';
      const button = h(
        'button',
        {
          type: 'button',
          class: 'danger',
          'data-palm': p.palm_id,
          'aria-label': `Remove ${hand.toLowerCase()}`,
        },
        'Remove',
      );
      button.addEventListener('click', async () => {
        if (!window.confirm(`Remove this ${hand.toLowerCase()}? It will no longer identify you anywhere.`))
          return;
        button.disabled = true;
        try {
          await userApi(`/v1/palms/${p.palm_id}`, { method: 'DELETE' });
          status.textContent = `${hand} removed.`;
          announce(status.textContent);
          await renderPalms(onChange);
          await onChange();
        } catch (err) {
          button.disabled = false;
          status.textContent = err instanceof ApiError ? err.message : 'Removing the palm failed. Try again.';
        }
      });
      return h(
        'li',
        { 'data-palm-id': p.palm_id },
        h(
          'p',
          {},
          `${hand}, registered ${whereText(p)} on `,
          h('time', { datetime: p.enrolled_at }, when(p.enrolled_at)),
          '. ',
        ),
        button,
      );
    }),
  );
}

/**
 * Revokes the tab's token (`DELETE /v1/tokens/current`) or every token of the account (`DELETE /v1/tokens`):
 * a leaked token stops working at once. docs/user-api.md, "Tokens".
 */
export async function revokeTokens(which: 'current' | 'all'): Promise<number> {
  const { data } = await userApi<{ revoked: number }>(which === 'all' ? '/v1/tokens' : '/v1/tokens/current', {
    method: 'DELETE',
  });
  return data.revoked;
}
