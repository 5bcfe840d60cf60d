type Child = Node | string | number | null | undefined | false;
type Attrs = Record<string, string | number | boolean | null | undefined>;

/**
 * A tiny element builder: attributes are set as attributes (never innerHTML), so text from the server is
 * always text. `false`/`null` attributes are left out, `true` ones are present and empty.
 */
export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Attrs = {},
  ...children: (Child | Child[])[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs)) {
    if (v === false || v === null || v === undefined) continue;
    el.setAttribute(k, v === true ? '' : String(v));
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
  return el;
}

export function $<T extends HTMLElement = HTMLElement>(selector: string, root: ParentNode = document): T {
  const el = root.querySelector<T>(selector);
  if (!el) throw new Error(`missing element ${selector}`);
  return el;
}

export function replace(el: Element, ...children: (Child | Child[])[]): void {
  el.replaceChildren();
  for (const c of children.flat()) {
    if (c === null || c === undefined || c === false) continue;
    el.append(c instanceof Node ? c : String(c));
  }
}

/** Says something to screen-reader users through the page's polite live region. */
export function announce(message: string): void {
  const region = document.getElementById('announcer');
  if (!region) return;
  region.textContent = '';
  // A fresh text node in a later task makes repeated identical messages be read again.
  setTimeout(() => {
    region.textContent = message;
  }, 30);
}

/** Marks a field invalid with a message that is both visible and read with the field. */
export function setFieldError(input: HTMLElement, message: string | null): void {
  const id = `${input.id}-error`;
  let box = document.getElementById(id);
  if (!box) {
    box = h('p', { id, class: 'field-error' });
    input.after(box); // right under the field, where the eye already is
  }
  box.textContent = message ?? '';
  box.hidden = !message;
  const described = (input.getAttribute('aria-describedby') ?? '').split(' ').filter((x) => x && x !== id);
  if (message) {
    input.setAttribute('aria-invalid', 'true');
    described.push(id);
  } else input.removeAttribute('aria-invalid');
  if (described.length) input.setAttribute('aria-describedby', described.join(' '));
  else input.removeAttribute('aria-describedby');
}

export function formStatus(form: HTMLElement, message: string, kind: 'ok' | 'error' = 'ok'): void {
  let box = form.querySelector<HTMLElement>('.form-status');
  if (!box) {
    box = h('p', { class: 'form-status', role: kind === 'error' ? 'alert' : 'status' });
    form.append(box);
  }
  box.setAttribute('role', kind === 'error' ? 'alert' : 'status');
  box.dataset.kind = kind;
  box.textContent = message;
}
