/**
 * The deepest nesting a JSON document may have (docs/security.md, "Second pass"): far above any body the API
 * takes (the deepest is an attribute value of type `any`), far below what would exhaust the stack of a
 * recursive walk over the parsed value (validation, serialisation), which answered 500 `RangeError`.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * The nesting depth of a JSON text, counted without parsing it: `[` and `{` outside strings open a level.
 * Stops counting as soon as `limit` is passed (returns limit + 1). Malformed text is left to the parser.
 */
export function jsonDepth(text: string, limit = MAX_JSON_DEPTH): number {
  let depth = 0;
  let deepest = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: the next character is escaped
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      depth++;
      if (depth > deepest) {
        deepest = depth;
        if (deepest > limit) return deepest;
      }
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return deepest;
}
