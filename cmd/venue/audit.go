package main

import (
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/backends"
	"github.com/venuehq/venue/directory"
	"github.com/venuehq/venue/handshake"
	"github.com/venuehq/venue/wire"
)

// auditCmd is `venue audit`: print the handshake's audit log (PIRCAN.md
// "The audit log") from Postgres, one JSON object a line, oldest first.
func auditCmd() *cobra.Command {
	var (
		databaseURL string
		since       time.Duration
		limit       int
	)
	cmd := &cobra.Command{
		Use:   "audit",
		Short: "Print the handshake's audit log from Postgres (DATABASE_URL)",
		Long: `Print the audit log of the brokered handshake (contact requests, decisions,
agreements, revocations, messages sent, tasks, reports, owner portal sign-ins
and sign-outs) from the Postgres database at --database-url (default: the
DATABASE_URL environment variable): one JSON object a line,
{"id","at","actor","action","subject","detail"}, oldest first, for the last
--since (default 24h), at most --limit lines (1-1000, default 100).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if databaseURL == "" {
				return errors.New("audit needs a database: pass --database-url or set DATABASE_URL")
			}
			if limit < 1 || limit > 1000 {
				return errors.New("--limit must be 1-1000")
			}
			ctx := cmd.Context()
			log := slog.New(slog.DiscardHandler)
			b, err := backends.Open(ctx, backends.Config{DatabaseURL: databaseURL, NoMigrate: true, Logger: log})
			if err != nil {
				return err
			}
			defer closeBackends(b, log)
			svc, err := handshake.New(handshake.Service{Store: b.Handshake, Agents: &directory.Service{Store: b.Store, Now: time.Now}, NewID: directory.NewID})
			if err != nil {
				return err
			}
			entries, err := svc.AuditLog(ctx, time.Now().Add(-since), limit)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			for _, e := range entries {
				if err := enc.Encode(map[string]any{"id": e.ID, "at": wire.Time(e.At), "actor": e.Actor,
					"action": e.Action, "subject": e.Subject, "detail": e.Detail}); err != nil {
					return fmt.Errorf("audit: write: %w", err)
				}
			}
			return nil
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", os.Getenv("DATABASE_URL"),
		"postgres://user:password@host:5432/db (env DATABASE_URL)")
	cmd.Flags().DurationVar(&since, "since", 24*time.Hour, "how far back to read")
	cmd.Flags().IntVar(&limit, "limit", 100, "at most this many lines (1-1000)")
	return cmd
}
