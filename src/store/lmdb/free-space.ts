import { statfsSync } from 'node:fs';
import { StoreUnavailableError } from '../../domain/interfaces.js';

/**
 * What the LMDB store keeps free on its data directory's filesystem. Commits write straight into
 * the memory-mapped data file (LMDB's WRITEMAP, open.ts), which the filesystem fills only when a
 * page is first written: on a full filesystem that write stops the process with SIGBUS, where a
 * `pwrite` would have failed the commit. Below this floor a serving process admits no new call
 * (503 `store_unavailable`, nothing forwarded) and an issuer change is refused, while the calls in
 * flight still settle: their records need a few hundred bytes each. Even at 10,000 calls a second
 * (a few MB of records a second, at a few hundred bytes each) 64 MiB lasts far longer than the
 * second between two looks.
 */
export const FREE_SPACE_FLOOR = 64 * 1024 * 1024;

/** Bytes an unprivileged process may still write on the filesystem that holds `dir`. */
export function freeBytesOf(dir: string): number {
  const fs = statfsSync(dir);
  return fs.bavail * fs.bsize;
}

/** The refusal of an issuer change below the floor: says what is free and why it matters. */
export function freeSpaceRefusal(dataDir: string, free: number): StoreUnavailableError {
  return new StoreUnavailableError(`the data directory ${dataDir} has ${mib(free)} MiB free, under the ${mib(FREE_SPACE_FLOOR)} MiB the store keeps free; free some space and run it again`);
}

/** MiB to one decimal, rounded down: just under the floor never reads as the floor. */
export function mib(bytes: number): string {
  return (Math.floor((bytes * 10) / (1024 * 1024)) / 10).toFixed(1);
}
