package main

import (
	"encoding/json"
	"errors"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/venuehq/venue/chaos"
)

func chaosCmd() *cobra.Command {
	var cfg chaos.Config
	cmd := &cobra.Command{
		Use:   "chaos",
		Short: "Run three venue nodes on their own Postgres and Redis, inject faults, check the invariants",
		Long: `chaos starts its own PostgreSQL (initdb in a scratch folder, as a non-root
user) and Redis on private ports, three nodes of this binary with a fault
proxy between every node and each service, drives negotiations whose parties
and observers sit on different nodes, injects every fault of RELIABILITY.md
(kill -9 and restart, SIGSTOP, cuts and 200 ms latency to Postgres and
Redis, a lost COMMIT answer, killed Postgres backends, a Postgres restart,
Redis restarted empty and flushed, a skewed and a stepped node clock) and
checks the invariants. It prints a JSON report and exits 1 on any violation.
It never touches the Postgres or Redis of DATABASE_URL or REDIS_URL.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if cfg.Binary == "" {
				exe, err := os.Executable()
				if err != nil {
					return err
				}
				cfg.Binary = exe
			}
			cfg.Log = cmd.ErrOrStderr()
			rep, err := chaos.Run(cmd.Context(), cfg)
			if err != nil {
				return err
			}
			enc := json.NewEncoder(cmd.OutOrStdout())
			enc.SetIndent("", "  ")
			if err := enc.Encode(rep); err != nil {
				return err
			}
			if !rep.OK {
				return errors.New("chaos: invariants violated or faults not injected (see the report)")
			}
			return nil
		},
	}
	f := cmd.Flags()
	f.DurationVar(&cfg.Duration, "duration", 60*time.Second, "how long the workload runs with faults")
	f.IntVar(&cfg.Groups, "groups", 6, "brand groups at once (each: one budget, two negotiations racing for it)")
	f.StringVar(&cfg.Dir, "dir", "", "scratch folder (default: a temporary one, removed when the run passes)")
	f.StringVar(&cfg.Binary, "binary", "", "venue binary the nodes run (default: this one)")
	return cmd
}
