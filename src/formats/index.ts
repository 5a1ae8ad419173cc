import type { Endpoint } from '../config/types.js';
import { chat } from './chat.js';
import { messages } from './messages.js';
import { responses } from './responses.js';
import type { FormatAdapter } from './types.js';

export const FORMATS: Readonly<Record<Endpoint, FormatAdapter>> = { chat, responses, messages };
export type { FormatAdapter, StreamState, Usage } from './types.js';
