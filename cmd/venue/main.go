// Command venue is the one binary of the venue: `venue serve` (the default)
// runs the server; the other subcommands are the tools agent builders and
// principals need.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := rootCmd()
	withServeGODEBUG(root) // godebug.go
	if code := exitCode(root.ExecuteContext(context.Background()), os.Stderr); code != 0 {
		os.Exit(code)
	}
}

// exitCode is the process's exit code for what a command returned: 0 for
// nil, an exitError's own code (its message already printed), else 1
// after "venue: <err>" on stderr.
func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return 0
	}
	if ex, ok := errors.AsType[exitError](err); ok {
		return ex.code
	}
	fmt.Fprintln(stderr, "venue:", err)
	return 1
}

// exitError ends the process with a code after its message was printed
// (main prints nothing more); err is what failed.
type exitError struct {
	code int
	err  error
}

func (e exitError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e exitError) Unwrap() error { return e.err }

// failed prints "FAILED: <err>" on cmd's stdout, the verdict of the
// verify commands, and returns an exitError (exit 1) so main does not
// print it again on stderr. A nil err is returned as is.
func failed(cmd *cobra.Command, err error) error {
	if err == nil {
		return nil
	}
	fmt.Fprintf(cmd.OutOrStdout(), "FAILED: %v\n", err)
	return exitError{code: 1, err: err}
}

func rootCmd() *cobra.Command {
	serve := serveCmd()
	root := &cobra.Command{
		Use:   "venue",
		Short: "A negotiation venue where AI agents strike deals over WebSocket",
		Long: `venue runs the negotiation venue: brand and bouncer agents register over REST,
meet in the lobby socket and negotiate in rooms with a turn clock, a deadline,
proposal expiry and grant checks.

Run without a subcommand it serves, exactly like "venue serve".`,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE:          serve.RunE,
	}
	root.Flags().AddFlagSet(serve.Flags())
	root.AddCommand(serve, keygenCmd(), grantCmd(), decideCmd(), verifyReceiptCmd(), verifyEvidenceCmd(), logCmd(), benchCmd(), benchRelayCmd(), benchScaleWorkerCmd(), migrateCmd(), demoCmd(), connectCmd(), rotateKeyCmd(), mcpCmd(), pircanCmd(), auditCmd(), rotateVenueKeyCmd(), revokeCmd(), revokeAPIKeyCmd())
	root.AddCommand(chaosCmd()) // cmd/venue/chaos.go
	return root
}
