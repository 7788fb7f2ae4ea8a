package main

// The plumbing the subcommands share: the common flags, flag parsing, error
// lines and exit codes, loading an event with its config, opening the app and
// printing JSON. Each command keeps its own flag set, help text and output;
// these helpers only write what every command used to write the same way.

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/sluicehq/sluice"
	"github.com/sluicehq/sluice/app"
	"github.com/sluicehq/sluice/config"
	"github.com/sluicehq/sluice/events"
)

// clock is the decision clock every command opens the app with; tests pin it.
var clock sluice.Clock = sluice.ClockFunc(time.Now)

// Exit statuses of every subcommand.
const (
	exitOK  = 0 // done: a decision made (or nothing to do), a check passed
	exitErr = 1 // anything but bad input: a provider, the ledger, a failed check
	exitBad = 2 // bad input: usage, event or config (stderr names the problem)
)

// subcommand is a command's entry point: it reads args (without its own
// name) and returns its exit status.
type subcommand func(ctx context.Context, args []string, stdout, stderr io.Writer) int

// dispatch runs the subcommand args[0] names with the rest of args. With no
// arguments it writes usage to stderr and returns exitBad; "-h", "--help" and
// "help" write usage to stdout (exitOK); an unknown name is refused with
// "<prefix>: unknown command NAME" and usage on stderr (exitBad). prefix is
// how the messages name the command: "sluice", "sluice policy".
func dispatch(ctx context.Context, prefix, usage string, subs map[string]subcommand, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return exitBad
	}
	if sub, ok := subs[args[0]]; ok {
		return sub(ctx, args[1:], stdout, stderr)
	}
	switch args[0] {
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return exitOK
	}
	fmt.Fprintf(stderr, "%s: unknown command %q\n%s", prefix, args[0], usage)
	return exitBad
}

// Usage texts of the --replay flag: quote sources only, or quote sources
// while placement follows the environment (drain, reconcile).
const (
	replayUsage          = "serve recorded provider responses from DIR on loopback instead of calling the providers"
	replayPlacementUsage = "serve recorded provider responses from DIR on loopback (quotes); placement as the environment says (SLUICE_PLACEMENT)"
)

// configFlag defines --config (default sluice.yaml).
func configFlag(fs *flag.FlagSet) *string {
	return fs.String("config", "sluice.yaml", "configuration file")
}

// ledgerFlag defines --ledger, the SQLite ledger file (default sluice.db).
func ledgerFlag(fs *flag.FlagSet) *string {
	return fs.String("ledger", "sluice.db", "SQLite ledger file")
}

// command is one subcommand as its messages name it: every line it writes
// to stderr starts "sluice <name>: ", e.g. "sluice burst: " or
// "sluice audit verify: ".
type command struct {
	name   string
	stderr io.Writer
}

// fail writes "sluice <name>: " and the formatted message as one line to
// stderr and returns code, so a command can end with return c.fail(...).
func (c command) fail(code int, format string, a ...any) int {
	fmt.Fprintf(c.stderr, "sluice "+c.name+": "+format+"\n", a...)
	return code
}

// exitCode is exitBad for an error app.IsBadInput calls bad input (a bad
// config or trigger) or a usage error (errUsage), exitErr for any other.
func exitCode(err error) int {
	if app.IsBadInput(err) || errors.Is(err, errUsage) {
		return exitBad
	}
	return exitErr
}

// parse parses args into fs, with the flag package's messages and -h usage
// on stderr. ok is false when the command must return code at once: exitOK
// after -h, exitBad for a bad flag (the flag package has said which).
// Positional arguments are left to the caller.
func (c command) parse(fs *flag.FlagSet, args []string) (code int, ok bool) {
	fs.SetOutput(c.stderr)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return exitOK, false
		}
		return exitBad, false
	}
	return exitOK, true
}

// noArgs refuses positional arguments: "unexpected arguments [...]", exitBad.
func (c command) noArgs(fs *flag.FlagSet) (code int, ok bool) {
	if fs.NArg() > 0 {
		return c.fail(exitBad, "unexpected arguments %q", fs.Args()), false
	}
	return exitOK, true
}

// parseFlagsOnly is parse then noArgs, for a command that takes flags only.
func (c command) parseFlagsOnly(fs *flag.FlagSet, args []string) (code int, ok bool) {
	if code, ok := c.parse(fs, args); !ok {
		return code, false
	}
	return c.noArgs(fs)
}

// eventFlags are the flags of a command that acts on an alarm event (burst,
// drain): --event (required), --config, --replay, --ledger and --json.
type eventFlags struct {
	event, config, replay, ledger *string
	json                          *bool
}

// addEventFlags defines the eventFlags on fs with the command's own usage
// texts for --event, --replay and --json.
func addEventFlags(fs *flag.FlagSet, eventUsage, replayUsage, jsonUsage string) eventFlags {
	return eventFlags{
		event:  fs.String("event", "", eventUsage),
		config: configFlag(fs),
		replay: fs.String("replay", "", replayUsage),
		ledger: ledgerFlag(fs),
		json:   fs.Bool("json", false, jsonUsage),
	}
}

// parseEvent parses args into fs (which holds f), requires --event, refuses
// positional arguments, then reads the event and config (loadEvent). On a
// failure, or after -h, it returns nil and the exit status.
func (c command) parseEvent(fs *flag.FlagSet, f eventFlags, args []string) (*alarm, int) {
	if code, ok := c.parse(fs, args); !ok {
		return nil, code
	}
	if *f.event == "" {
		return nil, c.fail(exitBad, "--event is required")
	}
	if code, ok := c.noArgs(fs); !ok {
		return nil, code
	}
	return c.loadEvent(*f.event, *f.config)
}

// alarm is an alarm event read for a command: its triggers, the config,
// and each trigger's queue profile (profiles[i] is triggers[i].Queue's).
type alarm struct {
	triggers []sluice.Trigger
	cfg      *config.Config
	profiles []sluice.QueueProfile
}

// loadEvent reads the alarm event at eventPath and the config at configPath
// and finds each trigger's queue profile, in that order, so that everything
// a caller can get wrong is checked before anything is opened. On a failure
// it writes the error (naming eventPath for the event's own faults) and
// returns nil and exitBad.
func (c command) loadEvent(eventPath, configPath string) (*alarm, int) {
	raw, err := os.ReadFile(eventPath)
	if err != nil {
		return nil, c.fail(exitBad, "%v", err)
	}
	al := &alarm{}
	if al.triggers, err = events.Parse(raw); err != nil {
		return nil, c.fail(exitBad, "%s: %v", eventPath, err)
	}
	if al.cfg, err = config.Load(configPath); err != nil {
		return nil, c.fail(exitBad, "%v", err)
	}
	for _, t := range al.triggers {
		p, err := al.cfg.Profile(t.Queue)
		if err != nil {
			return nil, c.fail(exitBad, "%s: %v", eventPath, err)
		}
		// Every trigger of the file is checked before anything is opened or
		// decided: one implausible alarm refuses the whole file.
		if err := sluice.CheckAlarmTime(t, clock.Now()); err != nil {
			return nil, c.fail(exitBad, "%s: %v", eventPath, err)
		}
		al.profiles = append(al.profiles, p)
	}
	return al, exitOK
}

// options is the app.Options of a command: cfg, the --replay directory and
// the --ledger path, the decision clock, and the FX source SLUICE_FX_URL
// names ("" = the config's).
func options(cfg *config.Config, replayDir, ledgerPath string) app.Options {
	return app.Options{Config: cfg, ReplayDir: replayDir, LedgerPath: ledgerPath, Clock: clock, FXURL: os.Getenv("SLUICE_FX_URL")}
}

// releaseOptions is options for a command that only releases (drain,
// reconcile): without --replay it fetches no FX rates, as releases use none.
func releaseOptions(cfg *config.Config, replayDir, ledgerPath string) app.Options {
	o := options(cfg, replayDir, ledgerPath)
	if replayDir == "" {
		o.FXURL = "off"
	}
	return o
}

// openApp opens the application with o; on failure it writes the error and
// returns nil and its exit code (exitCode).
func (c command) openApp(ctx context.Context, o app.Options) (*app.App, int) {
	a, err := app.Open(ctx, o)
	if err != nil {
		return nil, c.fail(exitCode(err), "%v", err)
	}
	return a, exitOK
}

// writeJSON writes v as indented JSON (two spaces) and a newline.
func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}
