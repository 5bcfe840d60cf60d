import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';

/**
 * The server's files are readable by its own user only (docs/security.md, "Files at rest"): directories it
 * creates are 0700, the database, its WAL and shared-memory files, the master key and the audit anchor
 * 0600. A directory that already exists is left as it is (it may be shared: `/tmp`, a home directory);
 * the files in it are tightened.
 */
export const PRIVATE_DIR_MODE = 0o700;
export const PRIVATE_FILE_MODE = 0o600;

/** Creates `dir` (and missing parents) as 0700; an existing directory keeps its mode. */
export function ensurePrivateDir(dir: string): void {
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
}

/**
 * The SQLite file at `path` and its companions made 0600: a missing database file is created empty as
 * 0600 before SQLite opens it (SQLite then gives its `-wal` and `-shm` files the database file's mode),
 * and files left by an earlier, looser start are tightened.
 */
export function privateSqliteFiles(path: string): void {
  if (!existsSync(path)) closeSync(openSync(path, 'a', PRIVATE_FILE_MODE));
  for (const f of [path, `${path}-wal`, `${path}-shm`, `${path}-journal`])
    if (existsSync(f)) chmodSync(f, PRIVATE_FILE_MODE);
}
