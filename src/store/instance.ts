import { randomBytes } from 'node:crypto';
import { readFileSync, readlinkSync } from 'node:fs';
import { hostname } from 'node:os';

/**
 * Which serving process owns a call in flight, and how another process knows it is gone.
 *
 * A process is an instance: a registered id and a heartbeat. Its pid alone proves nothing: two
 * gateways under one host name in different PID namespaces (containers with host networking,
 * pods with `hostNetwork: true`) may each see a pid of the other that is absent or someone else
 * in their own namespace. A pid is evidence only within the same boot and the same PID
 * namespace, and only together with the process's start time (a pid is reused): so those are
 * recorded at registration (`InstanceProof`), and a process is taken for dead before its
 * heartbeat expires only when all three match ours and its pid is gone or started at another
 * time (`provenGone`). Anywhere else (another machine, another namespace, no /proc) the
 * heartbeat alone decides.
 *
 * Ids: `instance:HOST:RANDOM`. They hold no `/`, so a build that parsed owners as `host/pid/…`
 * never reads a pid from them (a fleet upgraded host by host never takes a new process for a
 * dead old one); and an old owner (`host/pid/…`, or an LMDB row of host and pid) is read here
 * by its heartbeat only.
 */

/** What proves, on this machine, whether a registered process is still the one that registered. */
export interface InstanceProof {
  /** The kernel's boot id: the same machine, since the same boot. */
  boot: string;
  /** The PID namespace, as /proc/self/ns/pid names it (`pid:[INODE]`). */
  pidNamespace: string;
  pid: number;
  /** The process's start time (/proc/PID/stat field 22, clock ticks since boot): a reused pid has another. */
  startTime: string;
}

/** A new owner id for this process (never of the `host/pid/…` form). */
export function newInstanceId(): string {
  return `instance:${hostname().replaceAll('/', '_')}:${randomBytes(6).toString('hex')}`;
}

let own: InstanceProof | null | undefined;

/** This process's proof, read once; null where /proc does not say (not Linux). */
export function ownProof(): InstanceProof | null {
  if (own !== undefined) return own;
  try {
    own = {
      boot: readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim(),
      pidNamespace: readlinkSync('/proc/self/ns/pid'),
      pid: process.pid,
      startTime: startTimeOf(process.pid) ?? '',
    };
    if (own.startTime === '') own = null;
  } catch {
    own = null;
  }
  return own;
}

/** The proof as one text (stored with the heartbeat); '' when there is none. */
export function proofText(proof: InstanceProof | null): string {
  return proof === null ? '' : `${proof.boot} ${proof.pidNamespace} ${proof.pid} ${proof.startTime}`;
}

/** A proof from its text; null for none, or for anything not of that form (an older heartbeat). */
export function proofFrom(text: string | undefined | null): InstanceProof | null {
  if (!text) return null;
  const parts = text.split(' ');
  if (parts.length !== 4) return null;
  const pid = Number(parts[2]);
  if (!Number.isSafeInteger(pid) || pid <= 0) return null;
  return { boot: parts[0]!, pidNamespace: parts[1]!, pid, startTime: parts[3]! };
}

/**
 * Whether the process that recorded `proof` is certainly gone: it ran in this boot, in this PID
 * namespace, and its pid now names no process or one started at another time. False whenever
 * that cannot be known (then the heartbeat decides).
 */
export function provenGone(proof: InstanceProof | null): boolean {
  const mine = ownProof();
  if (proof === null || mine === null || proof.boot !== mine.boot || proof.pidNamespace !== mine.pidNamespace) return false;
  return startTimeOf(proof.pid) !== proof.startTime;
}

/** Field 22 of /proc/PID/stat, or null when there is no such process. */
function startTimeOf(pid: number): string | null {
  let stat: string;
  try {
    stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  } catch {
    return null;
  }
  // Field 2 (the command, in parentheses) may hold spaces: count from the last ')'.
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return fields[22 - 3] ?? null;
}
