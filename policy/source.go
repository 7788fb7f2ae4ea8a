package policy

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"path"
	"slices"
	"strings"
	"testing/fstest"

	"github.com/open-policy-agent/opa/v1/ast"
	"github.com/open-policy-agent/opa/v1/loader"
)

// fileSet is a loaded policy directory.
type fileSet struct {
	modules  map[string]*ast.Module // by file name
	data     map[string]any
	runtime  []string // runtime files (the revision's), sorted
	revision string   // SHA-256 of the runtime files
}

// load parses the policy files in fsys: the runtime files, plus the
// *_test.rego files when tests is true.
func load(fsys fs.FS, tests bool) (*fileSet, error) {
	runtime, err := runtimeFiles(fsys)
	if err != nil {
		return nil, fmt.Errorf("listing policy files: %w", err)
	}
	rev, err := revision(fsys, runtime)
	if err != nil {
		return nil, err
	}
	filter := loaderFilter
	if tests {
		filter = testLoaderFilter
	}
	loaded, err := loader.NewFileLoader().
		WithFS(fsys).
		WithRegoVersion(ast.RegoV1).
		WithProcessAnnotation(true). // the deny rules take their code, rule and title from METADATA
		Filtered([]string{"."}, filter)
	if err != nil {
		return nil, fmt.Errorf("loading policy: %w", err)
	}
	return &fileSet{modules: loaded.ParsedModules(), data: loaded.Documents, runtime: runtime, revision: rev}, nil
}

// runtimeFiles lists, sorted, the files the evaluator loads from fsys.
func runtimeFiles(fsys fs.FS) ([]string, error) {
	var files []string
	err := fs.WalkDir(fsys, ".", func(name string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			if name != "." && skipDir(d.Name()) {
				return fs.SkipDir
			}
			return nil
		}
		if runtimeFile(name) {
			files = append(files, name)
		}
		return nil
	})
	slices.Sort(files)
	return files, err
}

// runtimeFile reports whether a file is policy (Rego or data) and not a test.
func runtimeFile(name string) bool {
	base := path.Base(name)
	if strings.HasPrefix(base, ".") {
		return false
	}
	switch path.Ext(base) {
	case ".rego":
		return !strings.HasSuffix(base, "_test.rego")
	case ".json", ".yaml", ".yml":
		return true
	}
	return false
}

func skipDir(base string) bool {
	return strings.HasPrefix(base, ".") || strings.HasPrefix(base, "_") || base == "testdata"
}

// loaderFilter excludes from the OPA loader what runtimeFiles leaves out, so
// the revision covers exactly the files evaluated.
func loaderFilter(name string, info fs.FileInfo, depth int) bool {
	if depth == 0 {
		return false
	}
	if info.IsDir() {
		return skipDir(info.Name())
	}
	return !runtimeFile(name)
}

// testLoaderFilter is loaderFilter letting the *_test.rego files through.
func testLoaderFilter(name string, info fs.FileInfo, depth int) bool {
	if !info.IsDir() && strings.HasSuffix(info.Name(), "_test.rego") && !strings.HasPrefix(info.Name(), ".") {
		return false
	}
	return loaderFilter(name, info, depth)
}

// revision hashes the files like `sha256sum <files> | sha256sum`.
func revision(fsys fs.FS, files []string) (string, error) {
	var listing strings.Builder
	for _, name := range files {
		b, err := fs.ReadFile(fsys, name)
		if err != nil {
			return "", fmt.Errorf("reading policy file %s: %w", name, err)
		}
		sum := sha256.Sum256(b)
		listing.WriteString(hex.EncodeToString(sum[:]))
		listing.WriteString("  ")
		listing.WriteString(name)
		listing.WriteString("\n")
	}
	sum := sha256.Sum256([]byte(listing.String()))
	return hex.EncodeToString(sum[:]), nil
}

// Bundle limits: a policy bundle is a few hundred kilobytes at most.
const (
	maxBundleFiles    = 1000
	maxBundleFileSize = 8 << 20
	maxBundleSize     = 32 << 20
)

// ReadBundle reads a policy bundle: a gzipped tar of a policy directory
// (`tar czf policy.tar.gz -C policy .`) or a bundle made by `opa build -b
// policy/ --revision <git sha>`. It returns the files as an fs.FS for
// NewFromFS and the .manifest revision ("" when none), to be passed as
// WithVCSRevision. Paths are cleaned; absolute or ".." paths are refused.
func ReadBundle(r io.Reader) (fs.FS, string, error) {
	zr, err := gzip.NewReader(r)
	if err != nil {
		return nil, "", fmt.Errorf("policy bundle: not gzip: %w", err)
	}
	tr := tar.NewReader(io.LimitReader(zr, maxBundleSize+1))
	files := fstest.MapFS{}
	total := 0
	for {
		h, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, "", fmt.Errorf("policy bundle: %w", err)
		}
		if h.Typeflag != tar.TypeReg {
			continue // directories; links are not followed
		}
		name := path.Clean(strings.TrimPrefix(strings.TrimPrefix(h.Name, "/"), "./"))
		if !fs.ValidPath(name) || name == "." {
			return nil, "", fmt.Errorf("policy bundle: file %q: not a relative path inside the bundle", h.Name)
		}
		if len(files) >= maxBundleFiles || h.Size > maxBundleFileSize {
			return nil, "", fmt.Errorf("policy bundle: file %q: more than %d files or %d bytes", h.Name, maxBundleFiles, maxBundleFileSize)
		}
		b, err := io.ReadAll(io.LimitReader(tr, maxBundleFileSize+1))
		if err != nil {
			return nil, "", fmt.Errorf("policy bundle: file %q: %w", h.Name, err)
		}
		if total += len(b); total > maxBundleSize {
			return nil, "", fmt.Errorf("policy bundle: larger than %d bytes", maxBundleSize)
		}
		if _, dup := files[name]; dup {
			return nil, "", fmt.Errorf("policy bundle: file %q twice", name)
		}
		files[name] = &fstest.MapFile{Data: b, Mode: 0o444}
	}
	if len(files) == 0 {
		return nil, "", errors.New("policy bundle: no files")
	}
	var rev string
	if m, ok := files[".manifest"]; ok {
		var manifest struct {
			Revision string `json:"revision"`
		}
		if err := json.Unmarshal(m.Data, &manifest); err != nil {
			return nil, "", fmt.Errorf("policy bundle: .manifest: %w", err)
		}
		rev = manifest.Revision
	}
	return files, rev, nil
}

// RuleInfo is what a deny rule's METADATA says about it.
type RuleInfo struct {
	Rule        string `json:"rule"`
	Code        string `json:"code"`
	Title       string `json:"title"`
	Description string `json:"description"`
	// File and Line locate the rule in the policy source.
	File string `json:"file"`
	Line int    `json:"line"`
}

// ruleInfos indexes the annotated deny rules by custom.rule.
func ruleInfos(c *ast.Compiler) map[string]RuleInfo {
	out := map[string]RuleInfo{}
	for _, ref := range c.GetAnnotationSet().Flatten() {
		a := ref.Annotations
		if a == nil || a.Scope != "rule" {
			continue
		}
		rule, _ := a.Custom["rule"].(string)
		if rule == "" {
			continue
		}
		code, _ := a.Custom["code"].(string)
		info := RuleInfo{Rule: rule, Code: code, Title: a.Title, Description: strings.TrimSpace(a.Description)}
		if loc := ref.Location; loc != nil {
			info.File, info.Line = loc.File, loc.Row
		}
		out[rule] = info
	}
	return out
}

// Rules lists the annotated deny rules of the policy, sorted by rule.
func (e *Evaluator) Rules() []RuleInfo {
	out := make([]RuleInfo, 0, len(e.rules))
	for _, r := range e.rules {
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b RuleInfo) int { return strings.Compare(a.Rule, b.Rule) })
	return out
}

// Rule returns the METADATA of the deny rule named rule.
func (e *Evaluator) Rule(rule string) (RuleInfo, bool) {
	r, ok := e.rules[rule]
	return r, ok
}
