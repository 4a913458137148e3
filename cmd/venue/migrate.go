package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/backends"
	"github.com/venuehq/venue/store/postgres"
)

// migrateCmd is `venue migrate`: apply the embedded SQL migrations to a
// Postgres database and print what was applied. `venue serve` with
// DATABASE_URL does the same on start; this runs it ahead of a deploy.
func migrateCmd() *cobra.Command {
	var databaseURL string
	cmd := &cobra.Command{
		Use:   "migrate",
		Short: "Apply the database migrations to Postgres (DATABASE_URL)",
		Long: `Apply every pending migration embedded in this binary to the Postgres database
at --database-url (default: the DATABASE_URL environment variable), then print
the versions applied and the version the database is at. Several nodes may run
it at once: they take turns on an advisory lock and only one applies each
migration.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if databaseURL == "" {
				return errors.New("migrate needs a database: pass --database-url or set DATABASE_URL")
			}
			return runMigrate(cmd.Context(), cmd, databaseURL)
		},
	}
	cmd.Flags().StringVar(&databaseURL, "database-url", os.Getenv("DATABASE_URL"),
		"postgres://user:password@host:5432/db (env DATABASE_URL)")
	return cmd
}

func runMigrate(ctx context.Context, cmd *cobra.Command, databaseURL string) error {
	cctx, cancel := context.WithTimeout(ctx, backends.ConnectTimeout)
	s, err := postgres.New(cctx, databaseURL)
	cancel()
	if err != nil {
		return err
	}
	defer s.Close()
	applied, err := s.Migrate(ctx)
	out := cmd.OutOrStdout()
	for _, m := range applied {
		fmt.Fprintf(out, "applied %d %s (%s)\n", m.Version, m.Name, m.Duration.Round(time.Microsecond))
	}
	if err != nil {
		return err
	}
	v, err := s.SchemaVersion(ctx)
	if err != nil {
		return err
	}
	if len(applied) == 0 {
		fmt.Fprintf(out, "nothing to apply: %s is at version %d\n", postgres.RedactURL(databaseURL), v)
	} else {
		fmt.Fprintf(out, "%s is at version %d\n", postgres.RedactURL(databaseURL), v)
	}
	return nil
}
