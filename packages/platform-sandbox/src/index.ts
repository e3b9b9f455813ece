/** The platform emulator: `startSandbox` and its types. See docs/SANDBOX.md. */
export { startSandbox, type Sandbox } from './server.js';
export type { SandboxExtension, SandboxFaults, SandboxOptions } from './options.js';
export { EXTENSIONS } from './options.js';
export { SandboxOptionsError } from './errors.js';
export { parseRate, RATE_LIMIT_MODES, type Rate, type RateLimitMode } from './throttle.js';
export type { RequestEntry, StatsEntry } from './stats.js';
export type { Logger } from './log.js';
/** The PRNG behind fault decisions, for harnesses that want the same stream. */
export { seededRandom } from './faults.js';
