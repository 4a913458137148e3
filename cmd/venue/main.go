// Command venue is the one binary of the venue: `venue serve` (the default)
// runs the server; the other subcommands are the tools agent builders and
// principals need.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
)

func main() {
	root := rootCmd()
	withServeGODEBUG(root) // godebug.go
	if err := root.ExecuteContext(context.Background()); err != nil {
		var ex exitError
		if errors.As(err, &ex) {
			os.Exit(ex.code)
		}
		fmt.Fprintln(os.Stderr, "venue:", err)
		os.Exit(1)
	}
}

// exitError ends the process with a code after its message was printed.
type exitError struct{ code int }

func (e exitError) Error() string { return fmt.Sprintf("exit %d", e.code) }

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
