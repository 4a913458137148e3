package handshake

import (
	"context"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/venuehq/venue/wire"
)

// Limits of resources.
const (
	MaxTitleChars = 200
	MaxTags       = 10
	MaxTagChars   = 32
	// Per owning agent: resources held, their content's bytes together,
	// resources added an hour (PIRCAN.md "Limits of the handshake").
	MaxResourcesPerAgent     = 100
	MaxResourceBytesPerAgent = 1_000_000
	ResourcesPerHour         = 30
)

// ResourceInput is a new resource: title (1-200 characters), tags (at
// most 10 of 1-32 characters), access public or agreement, content (at
// most 60,000 bytes).
type ResourceInput struct {
	Title   string
	Tags    []string
	Access  string
	Content string
}

// AddResource adds a resource owned by owner (POST /v1/resources).
// Errors: invalid_argument, too_long, rate_limited (30 an hour),
// quota_exceeded (100 resources or 1,000,000 bytes of content held).
func (s *Service) AddResource(ctx context.Context, owner string, in ResourceInput, now time.Time) (Resource, error) {
	title := strings.TrimSpace(in.Title)
	if n := utf8.RuneCountInString(title); n < 1 || n > MaxTitleChars {
		return Resource{}, errorf(CodeInvalidArgument, "title must be 1-%d characters", MaxTitleChars)
	}
	if len(in.Tags) > MaxTags {
		return Resource{}, errorf(CodeInvalidArgument, "at most %d tags", MaxTags)
	}
	tags := make([]string, len(in.Tags))
	for i, t := range in.Tags {
		if n := utf8.RuneCountInString(t); n < 1 || n > MaxTagChars {
			return Resource{}, errorf(CodeInvalidArgument, "each tag is 1-%d characters", MaxTagChars)
		}
		tags[i] = strings.ToLower(t)
	}
	access := in.Access
	if access == "" {
		access = AccessAgreement
	}
	if access != AccessPublic && access != AccessAgreement {
		return Resource{}, errorf(CodeInvalidArgument, `access must be "public" or "agreement"`)
	}
	if strings.IndexByte(title+strings.Join(in.Tags, "")+in.Content, 0) >= 0 {
		return Resource{}, errorf(CodeInvalidArgument, "title, tags and content must not contain NUL characters")
	}
	if wire.HiddenAt(title+"\t"+strings.Join(in.Tags, "\t"), false) >= 0 { // labels (SECURITY.md "What the venue protects")
		return Resource{}, errorf(CodeInvalidArgument, "title and tags must not contain control or format characters (such as U+202E or U+200B)")
	}
	if len(in.Content) > MaxTextBytes {
		return Resource{}, errorf(CodeTooLong, "content is longer than %d bytes", MaxTextBytes)
	}
	r := Resource{ID: s.NewID("res"), Owner: owner, Title: title, Tags: tags, Access: access, Content: in.Content, At: now}
	err := s.do(ctx, now, []string{agentKey(owner)}, func(tx Tx, _ *effects) error {
		if err := resourceQuota(tx, owner, len(in.Content), now); err != nil {
			return err
		}
		if err := tx.Hit("resource", owner, now); err != nil {
			return err
		}
		if err := tx.CreateResource(r); err != nil {
			return err
		}
		return audit(tx, now, "agent:"+owner, "resource", r.ID, access)
	})
	return r, err
}

// Listed is a resource as RESOURCES shows it to one reader.
type Listed struct {
	Resource
	Readable bool
}

// View is the RESOURCE line and REST item: resource_id, title, tags,
// access, readable, size (bytes), by.
func (l Listed) View() map[string]any {
	return map[string]any{
		"resource_id": l.ID, "title": l.Title, "tags": l.Tags, "access": l.Access,
		"readable": l.Readable, "size": len(l.Content), "by": l.Owner,
	}
}

// Resources searches resource metadata by q (title) and tag for reader
// (RESOURCES, GET /v1/resources), limit 1-10 (default 5), and says which
// the reader may read: public ones, its own, and those of an agent that
// granted it resource:read.
func (s *Service) Resources(ctx context.Context, reader string, q ResourceQuery, now time.Time) ([]Listed, int, error) {
	if q.Limit == 0 {
		q.Limit = 5
	}
	if q.Limit < 1 || q.Limit > 10 || q.Offset < 0 {
		return nil, 0, errorf(CodeInvalidArgument, "limit must be 1-10 and offset 0 or more")
	}
	q.Tag = strings.ToLower(q.Tag)
	var out []Listed
	var total int
	err := s.do(ctx, now, nil, func(tx Tx, _ *effects) error {
		rs, n, err := tx.Resources(q)
		if err != nil {
			return err
		}
		total = n
		out = make([]Listed, len(rs))
		for i, r := range rs {
			ok, err := readable(tx, reader, r)
			if err != nil {
				return err
			}
			out[i] = Listed{Resource: r, Readable: ok}
		}
		return nil
	})
	return out, total, err
}

// ReadResource returns a resource with its content when reader may read
// it (GET /v1/resources/{id}). Errors: not_found, not_authorized.
func (s *Service) ReadResource(ctx context.Context, reader, id string, now time.Time) (Resource, error) {
	var out Resource
	err := s.do(ctx, now, nil, func(tx Tx, _ *effects) error {
		r, err := tx.Resource(id)
		if err != nil {
			return notFound(err, "no resource %s", id)
		}
		ok, err := readable(tx, reader, r)
		if err != nil {
			return err
		}
		if !ok {
			return errorf(CodeNotAuthorized, "resource %s needs an agreement with resource:read from %s", id, r.Owner)
		}
		out = r
		return nil
	})
	return out, err
}

func readable(tx Tx, reader string, r Resource) (bool, error) {
	if r.Access == AccessPublic || r.Owner == reader {
		return true, nil
	}
	_, err := authorizing(tx, reader, r.Owner, ScopeResourceRead)
	if err == nil {
		return true, nil
	}
	if isCode(err, CodeNotAuthorized) {
		return false, nil
	}
	return false, err
}

// resourceQuota refuses a resource of size bytes past owner's caps.
func resourceQuota(tx Tx, owner string, size int, now time.Time) error {
	if n, err := tx.Hits("resource", owner, now.Add(-time.Hour)); err != nil {
		return err
	} else if n >= ResourcesPerHour {
		return errorf(CodeRateLimited, "at most %d resources an hour", ResourcesPerHour)
	}
	n, b, err := tx.Usage(UsageResources, owner)
	if err != nil {
		return err
	}
	if n >= MaxResourcesPerAgent {
		return errorf(CodeQuotaExceeded, "an agent holds at most %d resources", MaxResourcesPerAgent)
	}
	if b+size > MaxResourceBytesPerAgent {
		return errorf(CodeQuotaExceeded, "an agent's resources hold at most %d bytes together (%d held)", MaxResourceBytesPerAgent, b)
	}
	return nil
}
