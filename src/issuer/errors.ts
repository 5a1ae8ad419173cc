/**
 * An issuer request that cannot be done, from either front end: the command line (exit 2, one
 * line naming the flag) or the admin API (the error envelope, naming the field). The rules are
 * written once (./input.ts, ./operations.ts); only the way a field is named differs.
 */
export type IssuerErrorCode =
  | 'missing_field' | 'invalid_field' | 'conflicting_fields' | 'unknown_field' | 'invalid_json'
  | 'unknown_model' | 'invalid_key_ref' | 'key_not_found' | 'ambiguous_key_ref' | 'wrong_key_mode';

/** How a front end names a field: `--rpm` on the command line, `rpm` in the admin API. */
export type Naming = 'cli' | 'api';

export type FieldName = (field: string) => string;

const NAMERS: Record<Naming, FieldName> = {
  cli: (field) => `--${field.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`,
  api: (field) => field,
};

export class IssuerError extends Error {
  constructor(
    readonly code: IssuerErrorCode,
    /** The field at fault (the envelope's `param`), or null. */
    readonly field: string | null,
    private readonly render: (name: FieldName) => string,
    /** HTTP status in the admin API. */
    readonly status = 400,
  ) {
    super(render(NAMERS.cli));
  }

  messageFor(naming: Naming): string {
    return this.render(NAMERS[naming]);
  }
}

/** `field problem`, the usual shape: "--rpm must be from 1 to 1000000". */
export function fieldError(code: IssuerErrorCode, field: string, problem: string): IssuerError {
  return new IssuerError(code, field, (n) => `${n(field)} ${problem}`);
}
