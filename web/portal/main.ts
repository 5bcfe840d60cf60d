import type { VendorPublic } from '@palmid/contracts/api/vendors';
import { announce, replace, setFieldError } from '../lib/dom.ts';
import { when } from '../lib/format.ts';
import { ApiError, call } from '../lib/http.ts';
import { downloadExport, renderAudit, showPalmCode } from './activity.ts';
import { renderAttributes } from './attributes.ts';
import { fillGrantForm, renderConsents, wireGrantForm } from './consents.ts';
import { renderPalms, revokeTokens } from './palms.ts';
import { renderPayments } from './payments.ts';
import { plainError } from './plain.ts';
import { onSessionExpired, rememberVendors, signedIn, signIn, signOut, userApi } from './session.ts';

const byId = <T extends HTMLElement = HTMLElement>(id: string) => document.getElementById(id) as T;

function notice(message: string | null, kind: 'ok' | 'bad' = 'ok'): void {
  const box = byId('notice');
  box.hidden = !message;
  box.className = `notice ${kind}`;
  box.textContent = message ?? '';
}

async function refreshAll(): Promise<void> {
  const { data } = await userApi<{ vendors: VendorPublic[] }>('/v1/vendors');
  rememberVendors(data.vendors);
  const attributes = await renderAttributes();
  fillGrantForm(attributes);
  await Promise.all([renderConsents(), renderAudit(), renderPalms(renderAudit), renderPayments()]);
}

function showSignedIn(userId: string | null): void {
  byId('sign-in').hidden = true;
  byId('app').hidden = false;
  byId('sign-out').hidden = false;
  byId('who').textContent = userId ? `Signed in · ${userId.slice(0, 8)}…` : 'Signed in';
  byId('app-title').focus();
}

function showSignedOut(): void {
  signOut();
  byId('app').hidden = true;
  byId('sign-out').hidden = true;
  byId('sign-in').hidden = false;
  byId('who').textContent = '';
  for (const id of [
    'user-attributes',
    'verified-attributes',
    'system-attributes',
    'consents',
    'audit',
    'palms',
    'payments',
  ]) {
    replace(byId(id));
  }
  byId<HTMLInputElement>('user-token').value = '';
  byId<HTMLInputElement>('claim-code').value = '';
}

/** Tries the token against the API before showing anything; a wrong one stays on the sign-in form. */
async function enter(token: string, input: HTMLInputElement, userId: string | null): Promise<void> {
  signIn(token);
  try {
    await refreshAll();
  } catch (err) {
    signOut();
    const message =
      err instanceof ApiError && err.status === 401
        ? 'That token is not valid (it may have expired or the account was erased).'
        : plainError(err, 'Could not sign in. Try again.');
    setFieldError(input, message);
    input.focus();
    return;
  }
  setFieldError(input, null);
  notice(null);
  showSignedIn(userId);
  announce('Signed in.');
}

function wireSignIn(): void {
  byId<HTMLFormElement>('token-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const input = byId<HTMLInputElement>('user-token');
    const token = input.value.trim();
    if (!/^ut_[A-Za-z0-9_-]+$/.test(token)) {
      setFieldError(input, 'Enter the token exactly as you received it; it starts with ut_.');
      input.focus();
      return;
    }
    await enter(token, input, null);
  });
  byId<HTMLFormElement>('claim-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    const input = byId<HTMLInputElement>('claim-code');
    const code = input.value.trim().toUpperCase();
    if (!code) {
      setFieldError(input, 'Enter the code shown on the kiosk.');
      input.focus();
      return;
    }
    try {
      const { data } = await call<{ user_id: string; user_token: string }>(
        '/v1/session',
        {},
        { method: 'POST', body: { claim_code: code } },
      );
      await enter(data.user_token, input, data.user_id);
    } catch (err) {
      const message =
        err instanceof ApiError && err.status === 401
          ? 'That code is not valid or was already used. Codes work once and expire.'
          : plainError(err, 'Could not sign in. Try again.');
      setFieldError(input, message);
      input.focus();
    }
  });
  byId('sign-out').addEventListener('click', () => {
    showSignedOut();
    notice('You are signed out. The token was forgotten by this tab.');
    byId('main').focus();
  });
}

/** Runs a background refresh; a 401 has already ended the session, anything else is said plainly. */
function background(work: Promise<unknown>, what: string): void {
  work.catch((err: unknown) => {
    if (err instanceof ApiError && err.status === 401) return;
    notice(`${what} failed. ${plainError(err, 'Try again in a moment.')}`, 'bad');
  });
}

function wireData(): void {
  byId('refresh-audit').addEventListener('click', () => {
    background(
      Promise.all([renderAudit(), renderPayments()]).then(() => announce('Activity refreshed.')),
      'Refreshing the activity',
    );
  });
  byId('palm-code').addEventListener('click', () => {
    background(showPalmCode(), 'Getting a code');
  });
  byId('export').addEventListener('click', () => {
    background(
      downloadExport().then(() => (signedIn() ? renderAudit() : undefined)),
      'Refreshing the activity',
    );
  });
  for (const [id, which] of [
    ['revoke-current', 'current'],
    ['revoke-all', 'all'],
  ] as const) {
    byId(id).addEventListener('click', async () => {
      if (
        which === 'all' &&
        !window.confirm('Revoke every token? You are signed out on every device, this tab too.')
      )
        return;
      try {
        const n = await revokeTokens(which);
        showSignedOut();
        notice(
          which === 'all'
            ? `${n} token(s) revoked: you are signed out on every device. Sign in again with a new code or token.`
            : 'This token was revoked and no longer works anywhere.',
        );
        byId('main').focus();
      } catch (err) {
        notice(`Revoking failed: ${err instanceof Error ? err.message : 'unknown error'}`, 'bad');
      }
    });
  }
  const dialog = byId<HTMLDialogElement>('erase-dialog');
  const confirmInput = byId<HTMLInputElement>('erase-confirm');
  byId('erase-open').addEventListener('click', () => {
    confirmInput.value = '';
    setFieldError(confirmInput, null);
    dialog.showModal();
    confirmInput.focus();
  });
  byId('erase-cancel').addEventListener('click', () => {
    dialog.close();
    byId('erase-open').focus();
  });
  byId<HTMLFormElement>('erase-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    if (confirmInput.value.trim() !== 'ERASE') {
      setFieldError(confirmInput, 'Type ERASE in capital letters to confirm.');
      confirmInput.focus();
      return;
    }
    const submit = byId<HTMLButtonElement>('erase-submit');
    submit.disabled = true;
    try {
      const { data } = await userApi<{ deleted: true; deleted_at: string }>('/v1/gdpr/delete-me', {
        method: 'DELETE',
      });
      dialog.close();
      showSignedOut();
      notice(`Your account was erased on ${when(data.deleted_at)}. Your token no longer works.`);
      byId('main').focus();
    } catch (err) {
      setFieldError(confirmInput, plainError(err, 'The erasure failed. Try again.'));
    } finally {
      submit.disabled = false;
    }
  });
}

onSessionExpired(() => {
  if (byId('app').hidden) return; // a wrong token on the sign-in form is reported there
  showSignedOut();
  notice('Your session ended (the token expired or was revoked). Sign in again.', 'bad');
  byId('main').focus();
});
wireSignIn();
wireGrantForm();
wireData();
document.documentElement.dataset.ready = 'portal';
