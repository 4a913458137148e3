package handshake

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"
)

// Limits of reports (PIRCAN.md "Limits of the handshake").
const (
	ReportsPerHour  = 5
	MaxDetailsChars = 500
)

// ReportCategories are the categories of REPORT.
var ReportCategories = []string{"spam", "abuse", "impersonation", "malware", "illegal", "other"}

// ReportInput is a REPORT: the reported agent, a category from
// ReportCategories and details (at most 500 characters).
type ReportInput struct {
	AgentID  string
	Category string
	Details  string
}

// Report flags an agent to the operators (REPORT, POST /v1/reports).
// Errors: self_report, invalid_argument (category, details), unknown_agent,
// rate_limited (5 reports an hour per agent), duplicate_report (your
// report on that agent is still open).
func (s *Service) Report(ctx context.Context, reporter string, in ReportInput, now time.Time) (Report, error) {
	if in.AgentID == reporter {
		return Report{}, errorf(CodeSelfReport, "you cannot report yourself")
	}
	ok := false
	for _, c := range ReportCategories {
		ok = ok || c == in.Category
	}
	if !ok {
		return Report{}, errorf(CodeInvalidArgument, "category must be spam, abuse, impersonation, malware, illegal or other")
	}
	if utf8.RuneCountInString(in.Details) > MaxDetailsChars || strings.IndexByte(in.Details, 0) >= 0 {
		return Report{}, errorf(CodeInvalidArgument, "details are longer than %d characters", MaxDetailsChars)
	}
	if _, err := s.agent(ctx, in.AgentID); err != nil {
		return Report{}, err
	}
	r := Report{ID: s.NewID("rep"), Reporter: reporter, Reported: in.AgentID, Category: in.Category, Details: in.Details, At: now, Open: true}
	err := s.do(ctx, now, []string{agentKey(reporter)}, func(tx Tx, _ *effects) error {
		if _, n, err := tx.Reports(ReportQuery{Reporter: reporter, Since: now.Add(-time.Hour)}); err != nil {
			return err
		} else if n >= ReportsPerHour {
			return errorf(CodeRateLimited, "at most %d reports an hour", ReportsPerHour)
		}
		if _, n, err := tx.Reports(ReportQuery{Reporter: reporter, Reported: in.AgentID, OpenOnly: true}); err != nil {
			return err
		} else if n > 0 {
			return errorf(CodeDuplicateReport, "your report on %s is still open", in.AgentID)
		}
		if err := tx.CreateReport(r); err != nil {
			return err
		}
		return audit(tx, now, "agent:"+reporter, "report", in.AgentID, in.Category)
	})
	return r, err
}
