// Rounding for the report: numbers in the JSON and the tables keep one or two decimals.

export const round1 = (x: number) => Math.round(x * 10) / 10;
export const round2 = (x: number) => Math.round(x * 100) / 100;
export const MiB = 1024 * 1024;
export const mib = (bytes: number) => round1(bytes / MiB);
