/**
 * The mock numbers its responses (`chatcmpl-mock7`, `msg_mock7`, …) and stamps them with the
 * current second, so two calls never produce identical bytes. Comparisons of the bytes a client
 * received with the bytes the provider sends replace exactly those two things and nothing else.
 */
export function normaliseIds(text: string): string {
  return text
    .replace(/(chatcmpl-mock|resp_mock|msg_mock|req_mock_)\d+/g, '$1N')
    .replace(/"(created|created_at)":\d+/g, '"$1":T');
}
