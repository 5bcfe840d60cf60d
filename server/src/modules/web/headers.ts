/** A Host header we are willing to echo into the CSP: a hostname or IP literal and an optional port. */
const SAFE_HOST = /^(?:[A-Za-z0-9.-]{1,253}|\[[0-9A-Fa-f:.]{2,45}\])(?::\d{1,5})?$/;

/**
 * The pages' Content-Security-Policy: scripts, styles and fetches only from this origin, no inline code
 * or styles, no frames, no plugins. `connect-src` names the ws:/wss: origin explicitly because older
 * engines do not let 'self' cover WebSocket schemes.
 */
export function contentSecurityPolicy(host: string | undefined): string {
  const sockets = host && SAFE_HOST.test(host) ? ` ws://${host} wss://${host}` : '';
  return [
    "default-src 'self'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    `connect-src 'self'${sockets}`,
    "object-src 'none'",
    "base-uri 'none'",
    "form-action 'self'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function securityHeaders(host: string | undefined): Record<string, string> {
  return {
    'Content-Security-Policy': contentSecurityPolicy(host),
    'X-Content-Type-Options': 'nosniff',
    'Referrer-Policy': 'no-referrer',
    'X-Frame-Options': 'DENY',
    'Cross-Origin-Opener-Policy': 'same-origin',
    'Cross-Origin-Resource-Policy': 'same-origin',
    'Permissions-Policy': 'camera=(), microphone=(), geolocation=(), payment=()',
  };
}
