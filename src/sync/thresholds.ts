/**
 * Safety valves checked after planning and before any write: a broken export
 * (wrong delimiter, truncated file, a mapping that now yields nothing) must
 * not be synced as if the CRM had changed, nor an export of 0 rows where the
 * last completed run read some. `--force` skips the check.
 */

export interface ThresholdCounts {
  /** Rows read from the export, valid or not. */
  read: number;
  invalid: number;
  /** Of the invalid rows, those with bytes that are not UTF-8 (the export's encoding is likely wrong). */
  notUtf8?: number;
  /** Planned creates. */
  creates: number;
  /** Planned updates. */
  updates: number;
  /**
   * No stored state exists for the entity at all: everything is new, so the
   * change share says nothing and is not checked.
   */
  firstSync: boolean;
  /**
   * Rows the job's last completed run read, when that says what a full
   * export should hold (not for an incremental pull, where 0 rows is news
   * of no change). An export of 0 rows after one that had some is broken.
   */
  lastCompletedRead?: number;
}

export interface Thresholds {
  /** Largest share (0..1) of invalid rows among rows read. */
  maxInvalidShare: number;
  /** Largest share (0..1) of rows that would be created or updated. */
  maxChangeShare: number;
  /** Below this many rows read, no share is checked (3 rows, 1 bad: not a signal). */
  minRows: number;
}

/**
 * Defaults: a tenth of the rows invalid already means a broken export or
 * mapping in practice; half of all records changing in one nightly run is
 * rare enough to ask for `--force`; under 20 rows shares are noise.
 */
export const DEFAULT_THRESHOLDS: Thresholds = {
  maxInvalidShare: 0.1,
  maxChangeShare: 0.5,
  minRows: 20,
};

export type ThresholdVerdict = { ok: true } | { ok: false; reason: string };

/** Whether the run may write; when not, a reason a human can act on. */
export function checkThresholds(
  counts: ThresholdCounts,
  limits: Thresholds = DEFAULT_THRESHOLDS,
): ThresholdVerdict {
  const { read } = counts;
  const before = counts.lastCompletedRead ?? 0;
  if (read === 0 && before > 0) {
    return {
      ok: false,
      reason:
        `the export has 0 rows; the last completed run read ${num(before)}: ` +
        'check the export (an empty or truncated file, a wrong path or filter); run with --force to sync anyway',
    };
  }
  if (read === 0 || read < limits.minRows) return { ok: true };

  const invalidShare = counts.invalid / read;
  if (invalidShare > limits.maxInvalidShare) {
    const notUtf8 = counts.notUtf8 ?? 0;
    const why =
      notUtf8 * 2 > counts.invalid
        ? `; most (${num(notUtf8)}) are not UTF-8: set source.encoding (e.g. windows-1252), or run with --force to sync anyway`
        : ': the export looks broken; run with --force to sync anyway';
    return {
      ok: false,
      reason:
        `${percent(invalidShare, limits.maxInvalidShare)} of rows are invalid ` +
        `(${num(counts.invalid)} of ${num(read)}), above the job's limit of ` +
        `${percent(limits.maxInvalidShare)}${why}`,
    };
  }

  if (!counts.firstSync) {
    const changes = counts.creates + counts.updates;
    const changeShare = changes / read;
    if (changeShare > limits.maxChangeShare) {
      return {
        ok: false,
        reason:
          `${percent(changeShare, limits.maxChangeShare)} of rows would change ` +
          `(${num(changes)} of ${num(read)}: ${num(counts.creates)} to create, ${num(counts.updates)} to update), ` +
          `above the job's limit of ${percent(limits.maxChangeShare)}: check the export and its mapping; ` +
          `run with --force to sync anyway`,
      };
    }
  }
  return { ok: true };
}

function num(n: number): string {
  return n.toLocaleString('en-US');
}

/**
 * A share as a percentage, rounded; with as many decimals as it takes to look
 * above the limit it exceeds ("10.4%", not "10%" against a limit of 10%).
 */
function percent(share: number, limit?: number): string {
  for (const digits of [0, 1, 2]) {
    const shown = (share * 100).toFixed(digits);
    if (limit === undefined || Number(shown) > limit * 100) return `${shown}%`;
  }
  return `${(share * 100).toFixed(3)}%`;
}
