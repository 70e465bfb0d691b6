/** A rate limit (from AWS_LIMITS or a raised quota) divided by the scale model's k; never below one unit, so a model always admits something. */
export function scaledRate(limit: number, k: number): number {
  if (!(k >= 1)) throw new Error(`the scale factor k must be at least 1, got ${k}`);
  return Math.max(1, limit / k);
}
