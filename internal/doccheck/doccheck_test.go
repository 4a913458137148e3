package doccheck

import (
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// root is the repository root, two levels up from this package.
const root = "../.."

var (
	// Documents outside the repository that comments must not cite: the
	// team's gap-filling spec and style guide, the seed documents, the
	// shared folder, issue numbers. Spelled with character classes so this line does not cite
	// them itself.
	outside = regexp.MustCompile(`V[E]NUE\.md|S[T]YLE\.md|I[R]C-TEST-NETWORK\.md|s[e]eds/|\.\./s[h]ared|\bi[s]sue [0-9]+\b`)
	// A citation: DOC.md followed by one or more quoted headings.
	citation = regexp.MustCompile(`\b(PROTOCOL|DELEGATION|ARCHITECTURE|PIRCAN)\.md((?:[ ;,]+(?:and )?"[^"]+")+)`)
	quoted   = regexp.MustCompile(`"([^"]+)"`)
	// Comment continuation: a line break inside a // comment.
	continuation = regexp.MustCompile(`\n[ \t]*// ?`)
)

func headings(t *testing.T, doc string) map[string]bool {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, doc))
	if err != nil {
		return nil
	}
	hs := map[string]bool{}
	for _, line := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(line, "#") {
			hs[strings.TrimSpace(strings.TrimLeft(line, "#"))] = true
		}
	}
	return hs
}

func TestCommentsCiteTheRepository(t *testing.T) {
	docs := map[string]map[string]bool{}
	for _, d := range []string{"PROTOCOL", "DELEGATION", "ARCHITECTURE", "PIRCAN"} {
		docs[d] = headings(t, d+".md")
	}
	checked := 0
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "doccheck_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var comments strings.Builder
		for _, line := range strings.Split(string(b), "\n") {
			if i := strings.Index(line, "//"); i >= 0 {
				comments.WriteString(line[i:])
				comments.WriteByte('\n')
			}
		}
		text := continuation.ReplaceAllString(comments.String(), " ")
		rel, _ := filepath.Rel(root, path)
		if m := outside.FindString(text); m != "" {
			t.Errorf("%s cites %q, which is not in the repository", rel, m)
		}
		for _, c := range citation.FindAllStringSubmatch(text, -1) {
			hs := docs[c[1]]
			if hs == nil {
				t.Errorf("%s cites %s.md, which the repository does not have", rel, c[1])
				continue
			}
			for _, q := range quoted.FindAllStringSubmatch(c[2], -1) {
				checked++
				if !hs[q[1]] {
					t.Errorf("%s cites %s.md %q: no such heading", rel, c[1], q[1])
				}
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if checked == 0 {
		t.Fatal("no citation found: the pattern no longer matches the code")
	}
}
