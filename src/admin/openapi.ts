/**
 * The admin API's OpenAPI 3.1 document, served at GET /admin/v1/openapi.json.
 * test/admin-api-openapi.test.ts holds the server to it both ways: every documented operation
 * answers as documented, every route the server has is documented, and request and response
 * bodies validate against these schemas.
 */

import { MAX_ACCOUNT_AMOUNT } from '../domain/rules.js';
import { formatUsdExact } from '../money.js';

const ref = (name: string): { $ref: string } => ({ $ref: `#/components/schemas/${name}` });
const json = (schema: unknown): Record<string, unknown> => ({ 'application/json': { schema } });
const errors = (...statuses: number[]): Record<string, unknown> =>
  Object.fromEntries(statuses.map((s) => [String(s), { $ref: `#/components/responses/E${s}` }]));
const ok = (description: string, schema: unknown, status = '200'): Record<string, unknown> => ({ [status]: { description, content: json(schema) } });
const keyRef = { name: 'ref', in: 'path', required: true, description: 'The key id (key_…) or its 12-character prefix (gw_live_xxxx). A full key goes in a body instead (POST /admin/v1/keys/lookup): one anywhere in a URL is refused, 400 invalid_key_ref.', schema: { type: 'string' } };
const dayParam = (name: string, what: string): Record<string, unknown> => ({ name, in: 'query', required: false, description: what, schema: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' } });
const formatParam = { name: 'format', in: 'query', required: false, description: 'json (default) or csv', schema: { enum: ['json', 'csv'] } };
const csv = { 'text/csv': { schema: { type: 'string', description: 'RFC 4180 CSV with a header row. A text cell beginning with =, +, -, @, a tab or a carriage return (and not a plain decimal number) starts with a single quote, so that a spreadsheet shows it rather than run it as a formula.' } } };
const body = (schema: unknown, required = true): Record<string, unknown> => ({ required, content: json(schema) });
const usd = { type: 'string', pattern: '^-?\\d+\\.\\d{6}$' };
const nonNegative = { type: 'integer', minimum: 0 };
const amountText = (what: string): Record<string, unknown> => ({ description: what, oneOf: [{ type: 'string' }, { type: 'number' }] });
const MOST = `A key holds at most ${formatUsdExact(MAX_ACCOUNT_AMOUNT)} USD or ${MAX_ACCOUNT_AMOUNT} tokens (exact integers): more is refused, 400 invalid_field`;
const newName = { description: 'no control characters (C0, DEL, C1), U+2028, U+2029 nor text-direction controls (U+061C, U+200E, U+200F, U+202A–U+202E, U+2066–U+2069): refused, 400 invalid_field' };

const keyCommon = {
  id: { type: 'string', pattern: '^key_[0-9a-f]{16}$' },
  prefix: { type: 'string', pattern: '^gw_live_[0-9a-f]{4}$' },
  name: { type: ['string', 'null'] },
  status: { enum: ['active', 'suspended'] },
  state: { enum: ['ok', 'suspended', 'expired', 'insufficient_credit', 'token_budget_exhausted'] },
  models: { type: ['array', 'null'], items: { type: 'string' } },
  rpm: { type: ['integer', 'null'], minimum: 1 },
  concurrency: { type: ['integer', 'null'], minimum: 1, description: 'calls of the key in flight at once; null: no limit' },
  expiresAt: { type: ['string', 'null'], format: 'date-time' },
  createdAt: { type: 'string', format: 'date-time' },
  rotatedFrom: { type: ['string', 'null'] },
  account: { type: 'string' },
};
const commonRequired = Object.keys(keyCommon);

export const OPENAPI = {
  openapi: '3.1.0',
  info: {
    title: 'tollgate admin API',
    version: '1',
    description: 'Issue and manage keys, switch models, read usage across keys and the audit trail. Every request needs "Authorization: Bearer <admin token>" (the variable admin.tokenEnv, default TOLLGATE_ADMIN_TOKEN). Errors use the gateway\'s envelope; `param` names the field at fault.',
  },
  jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
  security: [{ adminToken: [] }],
  paths: {
    '/admin/v1/openapi.json': { get: { operationId: 'openapi', summary: 'This document', responses: { ...ok('The OpenAPI document', { type: 'object', required: ['openapi', 'paths'] }), ...errors(400, 401) } } },
    '/admin/v1/keys': {
      get: { operationId: 'listKeys', summary: 'keys list', responses: { ...ok('Every key, oldest first', { type: 'array', items: ref('Key') }), ...errors(400, 401) } },
      post: { operationId: 'createKey', summary: 'keys create', requestBody: body(ref('CreateKey')), responses: { ...ok('The new key, with its secret (shown this once)', ref('NewKey'), '201'), ...errors(400, 401) } },
    },
    '/admin/v1/keys/lookup': {
      post: { operationId: 'lookupKey', summary: 'keys show with a full key (by its hash; the key stays out of URLs and logs)', requestBody: body(ref('Lookup')), responses: { ...ok('The key', ref('Key')), ...errors(400, 401, 404) } },
    },
    '/admin/v1/keys/{ref}': {
      parameters: [keyRef],
      get: { operationId: 'showKey', summary: 'keys show', responses: { ...ok('The key', ref('Key')), ...errors(400, 401, 404) } },
      patch: { operationId: 'setKey', summary: 'keys set: models (null: all models), rpm (null: no limit), concurrency (null: no limit), name', requestBody: body(ref('SetKey')), responses: { ...ok('The key as changed', ref('Key')), ...errors(400, 401, 404) } },
    },
    '/admin/v1/keys/{ref}/suspend': { parameters: [keyRef], post: { operationId: 'suspendKey', summary: 'keys suspend', responses: { ...ok('The key', ref('Key')), ...errors(400, 401, 404) } } },
    '/admin/v1/keys/{ref}/resume': { parameters: [keyRef], post: { operationId: 'resumeKey', summary: 'keys resume', responses: { ...ok('The key', ref('Key')), ...errors(400, 401, 404) } } },
    '/admin/v1/keys/{ref}/topup': { parameters: [keyRef], post: { operationId: 'topUpKey', summary: 'keys topup', requestBody: body(ref('TopUp')), responses: { ...ok('The key with its new balance or budget', ref('Key')), ...errors(400, 401, 404) } } },
    '/admin/v1/keys/{ref}/extend': { parameters: [keyRef], post: { operationId: 'extendKey', summary: 'keys extend', requestBody: body(ref('Extend')), responses: { ...ok('The key', ref('Key')), ...errors(400, 401, 404) } } },
    '/admin/v1/keys/{ref}/rotate': { parameters: [keyRef], post: { operationId: 'rotateKey', summary: 'keys rotate: a new key with its own id, drawing on the same balance or budget', responses: { ...ok('The new key, with its secret', ref('NewKey'), '201'), ...errors(400, 401, 404) } } },
    '/admin/v1/keys/{ref}/usage': {
      parameters: [keyRef],
      get: {
        operationId: 'keyUsage', summary: 'One key\'s usage records (oldest first) and daily totals over a range of UTC days',
        parameters: [dayParam('from', 'first day, default 29 days before `to`'), dayParam('to', 'last day, default today (UTC)'), formatParam, { name: 'limit', in: 'query', required: false, description: 'most records returned (1–10000, default 1000)', schema: { type: 'integer', minimum: 1, maximum: 10000 } }],
        responses: { '200': { description: 'Records and daily totals (JSON), or the records as CSV', content: { ...json(ref('KeyUsage')), ...csv } }, ...errors(400, 401, 404) },
      },
    },
    '/admin/v1/keys/{ref}/daily': {
      parameters: [keyRef],
      get: {
        operationId: 'keyDaily', summary: 'One key\'s daily totals over a range of UTC days',
        parameters: [dayParam('from', 'first day'), dayParam('to', 'last day'), formatParam],
        responses: { '200': { description: 'Daily totals', content: { ...json(ref('KeyDaily')), ...csv } }, ...errors(400, 401, 404) },
      },
    },
    '/admin/v1/usage': {
      get: {
        operationId: 'usageTotals', summary: 'Totals per key over a range of UTC days (every key, zeros included)',
        parameters: [dayParam('from', 'first day'), dayParam('to', 'last day'), formatParam],
        responses: { '200': { description: 'Totals per key', content: { ...json(ref('UsageTotals')), ...csv } }, ...errors(400, 401) },
      },
    },
    '/admin/v1/models': { get: { operationId: 'listModels', summary: 'models list', responses: { ...ok('The catalogue', { type: 'array', items: ref('Model') }), ...errors(400, 401) } } },
    '/admin/v1/models/{id}/enable': { parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], post: { operationId: 'enableModel', summary: 'models enable', responses: { ...ok('The model', ref('Model')), ...errors(400, 401, 404) } } },
    '/admin/v1/models/{id}/disable': { parameters: [{ name: 'id', in: 'path', required: true, schema: { type: 'string' } }], post: { operationId: 'disableModel', summary: 'models disable', responses: { ...ok('The model', ref('Model')), ...errors(400, 401, 404) } } },
    '/admin/v1/audit': {
      get: {
        operationId: 'audit', summary: 'The audit trail, oldest first',
        parameters: [{ name: 'key', in: 'query', required: false, description: 'only this key\'s entries (id or prefix; a full key is refused, 400 invalid_key_ref)', schema: { type: 'string' } }],
        responses: { ...ok('Audit entries', { type: 'array', items: ref('AuditEntry') }), ...errors(400, 401, 404) },
      },
    },
  },
  components: {
    securitySchemes: { adminToken: { type: 'http', scheme: 'bearer', description: 'The admin token (environment variable admin.tokenEnv)' } },
    responses: {
      E400: { description: 'Invalid request: `code` says what (missing_field, invalid_field, conflicting_fields, unknown_field, invalid_json, unknown_model, invalid_key_ref, ambiguous_key_ref, wrong_key_mode; invalid_key_ref also for a full key anywhere in the URL) and `param` names the field', content: json(ref('Error')) },
      E401: { description: 'invalid_admin_token: no token, a wrong one, or none configured', content: json(ref('Error')) },
      E404: { description: 'key_not_found, unknown_model or unknown_endpoint', content: json(ref('Error')) },
    },
    schemas: {
      Error: {
        type: 'object', additionalProperties: false, required: ['error'],
        properties: { error: { type: 'object', additionalProperties: false, required: ['message', 'type', 'code', 'param'], properties: { message: { type: 'string' }, type: { type: 'string' }, code: { type: 'string' }, param: { type: ['string', 'null'] } } } },
      },
      Key: {
        oneOf: [
          { type: 'object', additionalProperties: false, required: [...commonRequired, 'mode', 'balanceUsd', 'balanceNanoUsd', 'heldUsd', 'heldNanoUsd'], properties: { ...keyCommon, mode: { const: 'credit' }, balanceUsd: usd, balanceNanoUsd: { type: 'integer', description: 'the balance, exact, in nano-dollars (10⁻⁹ USD)' }, heldUsd: { ...usd, description: 'held by calls in flight (their worst case)' }, heldNanoUsd: { ...nonNegative, description: 'the same, exact, in nano-dollars' } } },
          { type: 'object', additionalProperties: false, required: [...commonRequired, 'mode', 'budgetTokens', 'usedTokens', 'remainingTokens', 'overdraftTokens', 'heldTokens'], properties: { ...keyCommon, mode: { const: 'token' }, budgetTokens: nonNegative, usedTokens: nonNegative, remainingTokens: nonNegative, overdraftTokens: { ...nonNegative, description: 'tokens used above the budget (the last call is charged in full); a top-up covers these first' }, heldTokens: { ...nonNegative, description: 'held by calls in flight (their worst case)' } } },
        ],
      },
      NewKey: {
        description: 'A Key plus `key`, the full secret (shown only in this answer; only its SHA-256 is stored)',
        allOf: [{ type: 'object', required: ['key'], properties: { key: { type: 'string', pattern: '^gw_live_[0-9a-f]{32}$' } } }, { oneOf: [
          { type: 'object', required: [...commonRequired, 'mode', 'balanceUsd', 'balanceNanoUsd', 'heldUsd', 'heldNanoUsd'], properties: { mode: { const: 'credit' } } },
          { type: 'object', required: [...commonRequired, 'mode', 'budgetTokens', 'usedTokens', 'remainingTokens', 'heldTokens'], properties: { mode: { const: 'token' } } },
        ] }],
      },
      CreateKey: {
        type: 'object', additionalProperties: false, required: ['mode'],
        properties: {
          mode: { enum: ['credit', 'token'] },
          balance: amountText(`credit keys: opening balance in USD, as decimal text ("5", "12.50", up to 9 decimals). ${MOST}`),
          budget: amountText(`token keys: the token budget, a whole number. ${MOST}`),
          models: { type: ['array', 'null'], items: { type: 'string' }, description: 'allowlist; absent or null: every enabled model' },
          rpm: { type: ['integer', 'null'], minimum: 1, maximum: 1000000 },
          concurrency: { type: ['integer', 'null'], minimum: 1, maximum: 1000000, description: 'calls in flight at once; absent or null: no limit' },
          expires: { type: ['string', 'null'], description: 'ISO-8601 date or date-time (a bare date: the end of that day, UTC)' },
          name: { type: ['string', 'null'], ...newName },
        },
      },
      SetKey: {
        type: 'object', additionalProperties: false, minProperties: 1,
        properties: { models: { type: ['array', 'null'], items: { type: 'string' } }, rpm: { type: ['integer', 'null'], minimum: 1, maximum: 1000000 }, concurrency: { type: ['integer', 'null'], minimum: 1, maximum: 1000000 }, name: { type: 'string', ...newName } },
      },
      TopUp: {
        type: 'object', additionalProperties: false, minProperties: 1, maxProperties: 1,
        properties: { usd: amountText(`credit keys: USD to add, decimal text. ${MOST}, and so is a top-up that would take the balance past it`), tokens: amountText(`token keys: tokens to add. ${MOST}, and so is a top-up that would take the budget past it`) },
      },
      Extend: { type: 'object', additionalProperties: false, required: ['expires'], properties: { expires: { type: 'string', description: 'ISO-8601 date or date-time, or "never"' } } },
      Lookup: { type: 'object', additionalProperties: false, required: ['key'], properties: { key: { type: 'string', pattern: '^gw_live_[0-9a-f]{32}$' } } },
      Model: {
        type: 'object', additionalProperties: false, required: ['id', 'provider', 'endpoints', 'enabled', 'usable', 'price', 'contextWindow', 'capabilities', 'credentialEnv'],
        properties: {
          id: { type: 'string' }, aliases: { type: 'array', items: { type: 'string' }, description: 'other ids served as this entry' }, provider: { type: 'string' },
          endpoints: { type: 'array', items: { enum: ['chat', 'responses', 'messages'] } },
          enabled: { type: 'boolean' },
          usable: { type: 'boolean', description: 'false when the provider\'s credential variable is unset in the serving process' },
          price: { type: 'object', required: ['input', 'output'], description: 'USD per million tokens, and the price levers (README, Prices)', properties: { input: { type: 'number' }, output: { type: 'number' }, cachedInput: { type: 'number' }, cacheWrite: { type: 'number' }, cacheWrite1h: { type: 'number' }, cacheWriteExtended: { type: 'number' }, audioInput: { type: 'number' }, audioOutput: { type: 'number' }, imageInput: { type: 'number' }, imageOutput: { type: 'number' }, tiers: { type: 'object' }, speed: { type: 'object' }, longContext: { type: 'object' }, inferenceGeo: { type: 'object' }, regionalProcessing: { type: 'number' }, toolCalls: { type: 'object' } } },
          contextWindow: { type: ['integer', 'null'] },
          capabilities: { type: 'array', items: { type: 'string' } },
          credentialEnv: { type: 'string', description: 'the variables its provider\'s credentials are read from when the server starts, comma-separated (names only)' },
        },
      },
      UsageRecord: {
        type: 'object', additionalProperties: false,
        required: ['at', 'requestId', 'endpoint', 'model', 'stream', 'status', 'inputTokens', 'outputTokens', 'cachedInputTokens', 'cacheWriteTokens', 'reasoningTokens', 'costUsd', 'costNanoUsd', 'tokensCharged', 'error', 'estimated', 'clientGone'],
        properties: {
          at: { type: 'string', format: 'date-time' }, requestId: { type: 'string' }, endpoint: { enum: ['chat', 'responses', 'messages', 'models'] }, model: { type: 'string' },
          stream: { type: 'boolean' }, status: { type: 'integer' }, inputTokens: nonNegative, outputTokens: nonNegative, cachedInputTokens: nonNegative, cacheWriteTokens: nonNegative, reasoningTokens: nonNegative,
          costUsd: { type: ['string', 'null'] }, costNanoUsd: { type: ['integer', 'null'] }, tokensCharged: nonNegative, error: { type: ['string', 'null'] }, estimated: { type: 'boolean' }, clientGone: { type: 'boolean' },
          callId: { type: 'string' },
          estimateReason: { type: ['string', 'null'], description: 'why the tokens were estimated (README, Usage checker), null when they were read' },
          cacheWrite1hTokens: nonNegative, audioInputTokens: nonNegative, imageInputTokens: nonNegative, audioOutputTokens: nonNegative, imageOutputTokens: nonNegative,
          toolCalls: { type: ['object', 'null'], additionalProperties: nonNegative, description: 'fee-bearing server tool calls by name' },
          serviceTier: { type: ['string', 'null'] }, speed: { type: ['string', 'null'] }, inferenceGeo: { type: ['string', 'null'] }, longContext: { type: 'boolean' },
          worstCase: { type: ['string', 'null'], description: 'what was charged at the price\'s highest rate because it has no rate for it (README, Prices)' },
          attempts: { type: 'integer', minimum: 0, description: 'sends to the provider for this call, retries included (0: answered without a send; records made before credential pools: 1)' },
          credential: { type: ['string', 'null'], description: 'the name (never the value) of the provider credential whose answer the client got, else of the last one sent to; null when none was' },
        },
      },
      DailyTotal: {
        type: 'object', additionalProperties: false, required: ['day', 'requests', 'costUsd', 'costNanoUsd', 'tokens', 'byModel'],
        properties: {
          day: { type: 'string', pattern: '^\\d{4}-\\d{2}-\\d{2}$' }, requests: nonNegative, costUsd: usd, costNanoUsd: { type: 'integer' }, tokens: nonNegative,
          byModel: { type: 'array', items: { type: 'object', additionalProperties: false, required: ['model', 'requests', 'costUsd', 'costNanoUsd', 'tokens'], properties: { model: { type: 'string' }, requests: nonNegative, costUsd: usd, costNanoUsd: { type: 'integer' }, tokens: nonNegative } } },
        },
      },
      KeyUsage: {
        type: 'object', additionalProperties: false, required: ['key', 'from', 'to', 'requests', 'truncated', 'daily'],
        properties: { key: ref('Key'), from: { type: 'string' }, to: { type: 'string' }, requests: { type: 'array', items: ref('UsageRecord') }, truncated: { type: 'boolean', description: 'more records exist in the range than `limit`' }, daily: { type: 'array', items: ref('DailyTotal') } },
      },
      KeyDaily: {
        type: 'object', additionalProperties: false, required: ['id', 'prefix', 'from', 'to', 'daily'],
        properties: { id: { type: 'string' }, prefix: { type: 'string' }, from: { type: 'string' }, to: { type: 'string' }, daily: { type: 'array', items: ref('DailyTotal') } },
      },
      UsageTotals: {
        type: 'object', additionalProperties: false, required: ['from', 'to', 'keys'],
        properties: {
          from: { type: 'string' }, to: { type: 'string' },
          keys: { type: 'array', items: { type: 'object', additionalProperties: false, required: ['id', 'prefix', 'name', 'mode', 'requests', 'costUsd', 'costNanoUsd', 'tokens'], properties: { id: { type: 'string' }, prefix: { type: 'string' }, name: { type: ['string', 'null'] }, mode: { enum: ['credit', 'token'] }, requests: nonNegative, costUsd: usd, costNanoUsd: { type: 'integer' }, tokens: nonNegative } } },
        },
      },
      AuditEntry: {
        type: 'object', additionalProperties: false, required: ['at', 'action', 'keyId', 'actor', 'address', 'detail'],
        properties: {
          at: { type: 'string', format: 'date-time' },
          action: { enum: ['key.create', 'key.suspend', 'key.resume', 'key.topup', 'key.extend', 'key.set', 'key.rotate', 'model.enable', 'model.disable'] },
          keyId: { type: ['string', 'null'] },
          actor: { type: 'string', description: 'cli@HOSTNAME (local command line) or admin-api' },
          address: { type: ['string', 'null'], description: 'the admin API caller\'s address' },
          detail: { type: 'object' },
        },
      },
    },
  },
} as const;
