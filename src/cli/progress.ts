// The CLI's progress bars: redrawn in place on a terminal, a plain line every 2 s otherwise.
import cliProgress from 'cli-progress';

/** Bars of one command, each line drawn from `format` (cli-progress placeholders). */
export function progressBars(format: string): cliProgress.MultiBar {
  return new cliProgress.MultiBar(
    {
      format,
      hideCursor: true,
      noTTYOutput: true,
      notTTYSchedule: 2000,
      stopOnComplete: false,
      clearOnComplete: false,
    },
    cliProgress.Presets.shades_classic,
  );
}
