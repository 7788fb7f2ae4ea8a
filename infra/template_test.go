// Package infra_test checks infra/template.yaml statically: it parses (YAML
// with CloudFormation's short-form tags), every function's CodeUri is a
// package infra/package.sh builds from a main in functions/, the tables and
// the archive bucket keep what finance needs, and each function's IAM policy
// allows exactly the AWS calls its code makes — no wildcard actions, no
// action the code does not call.
package infra_test

import (
	"bytes"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// cfn converts a YAML node to plain values; a node with a CloudFormation
// short-form tag (!Ref, !Sub, !GetAtt, !If, ...) becomes {"!Tag": value}.
func cfn(n *yaml.Node) any {
	var v any
	switch n.Kind {
	case yaml.DocumentNode:
		return cfn(n.Content[0])
	case yaml.MappingNode:
		m := map[string]any{}
		for i := 0; i < len(n.Content); i += 2 {
			m[n.Content[i].Value] = cfn(n.Content[i+1])
		}
		v = m
	case yaml.SequenceNode:
		s := []any{}
		for _, c := range n.Content {
			s = append(s, cfn(c))
		}
		v = s
	case yaml.ScalarNode:
		v = n.Value
	case yaml.AliasNode:
		v = cfn(n.Alias)
	}
	if strings.HasPrefix(n.Tag, "!") && !strings.HasPrefix(n.Tag, "!!") {
		return map[string]any{n.Tag: v}
	}
	return v
}

func loadTemplate(t *testing.T) map[string]any {
	t.Helper()
	b, err := os.ReadFile("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	var n yaml.Node
	if err := yaml.Unmarshal(b, &n); err != nil {
		t.Fatalf("template.yaml does not parse: %v", err)
	}
	return cfn(&n).(map[string]any)
}

var knownTags = map[string]bool{"!Ref": true, "!Sub": true, "!GetAtt": true, "!If": true, "!Equals": true, "!Not": true,
	"!And": true, "!Or": true, "!Join": true, "!Select": true, "!Split": true, "!FindInMap": true, "!ImportValue": true, "!Condition": true}

// walk calls f on every value of v.
func walk(v any, f func(any)) {
	f(v)
	switch x := v.(type) {
	case map[string]any:
		for _, e := range x {
			walk(e, f)
		}
	case []any:
		for _, e := range x {
			walk(e, f)
		}
	}
}

func TestTemplateShape(t *testing.T) {
	tpl := loadTemplate(t)
	if tpl["Transform"] != "AWS::Serverless-2016-10-31" {
		t.Errorf("Transform %v", tpl["Transform"])
	}
	res := tpl["Resources"].(map[string]any)
	params := tpl["Parameters"].(map[string]any)
	conds := tpl["Conditions"].(map[string]any)
	// Every tag is a CloudFormation function; every !Ref names a parameter, a
	// resource or a pseudo parameter; every Condition exists.
	walk(tpl, func(v any) {
		m, ok := v.(map[string]any)
		if !ok {
			return
		}
		for k, e := range m {
			if strings.HasPrefix(k, "!") && !knownTags[k] {
				t.Errorf("unknown tag %s", k)
			}
			if k == "!Ref" {
				name := e.(string)
				_, isParam := params[name]
				_, isRes := res[name]
				if !isParam && !isRes && !strings.HasPrefix(name, "AWS::") {
					t.Errorf("!Ref %s names nothing", name)
				}
			}
			if k == "!GetAtt" {
				if _, ok := res[strings.SplitN(e.(string), ".", 2)[0]]; !ok {
					t.Errorf("!GetAtt %s names no resource", e)
				}
			}
			if k == "!Sub" {
				s, _ := e.(string)
				for _, m := range regexp.MustCompile(`\$\{([^}!]+)\}`).FindAllStringSubmatch(s, -1) {
					name := strings.SplitN(m[1], ".", 2)[0]
					_, isParam := params[name]
					_, isRes := res[name]
					if !isParam && !isRes && !strings.HasPrefix(name, "AWS::") {
						t.Errorf("!Sub %q: ${%s} names nothing", s, m[1])
					}
				}
			}
		}
	})
	for name, r := range res {
		if c, ok := r.(map[string]any)["Condition"]; ok {
			if _, ok := conds[c.(string)]; !ok {
				t.Errorf("%s: condition %v does not exist", name, c)
			}
		}
	}
	// Every parameter is documented and used.
	raw, err := os.ReadFile("template.yaml")
	if err != nil {
		t.Fatal(err)
	}
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for name, p := range params {
		if !bytes.Contains(readme, []byte("| `"+name+"` |")) {
			t.Errorf("parameter %s has no row in README.md's parameter table", name)
		}
		if p.(map[string]any)["Description"] == nil {
			t.Errorf("parameter %s has no Description", name)
		}
		if bytes.Count(raw, []byte(name)) < 2 {
			t.Errorf("parameter %s is never used", name)
		}
	}
	glob := tpl["Globals"].(map[string]any)["Function"].(map[string]any)
	if glob["Runtime"] != "provided.al2023" || glob["Handler"] != "bootstrap" || !slices.Equal(glob["Architectures"].([]any), []any{"arm64"}) {
		t.Errorf("Globals.Function %v", glob)
	}
	built := packaged(t)
	fns := 0
	for name, r := range res {
		r := r.(map[string]any)
		if r["Type"] != "AWS::Serverless::Function" {
			continue
		}
		fns++
		p := r["Properties"].(map[string]any)
		uri, _ := p["CodeUri"].(string)
		fn := strings.TrimSuffix(filepath.Base(uri), ".zip")
		if filepath.Dir(uri) != "../build" || !strings.HasSuffix(uri, ".zip") || !built[fn] {
			t.Errorf("%s: CodeUri %q is not a zip infra/package.sh builds (%v)", name, uri, built)
		}
		if _, err := os.Stat(filepath.Join("..", "functions", fn, "main.go")); err != nil {
			t.Errorf("%s: no functions/%s/main.go", name, fn)
		}
		if p["ReservedConcurrentExecutions"] == nil || p["Timeout"] == nil {
			t.Errorf("%s: needs ReservedConcurrentExecutions and Timeout", name)
		}
	}
	if fns != 3 {
		t.Errorf("%d functions, want burst, drain, reconcile", fns)
	}
	for _, tbl := range []string{"LedgerTable", "BudgetsTable"} {
		p := res[tbl].(map[string]any)["Properties"].(map[string]any)
		if p["PointInTimeRecoverySpecification"].(map[string]any)["PointInTimeRecoveryEnabled"] != "true" {
			t.Errorf("%s without point-in-time recovery", tbl)
		}
	}
	b := res["ArchiveBucket"].(map[string]any)["Properties"].(map[string]any)
	lock := b["ObjectLockConfiguration"].(map[string]any)
	if b["VersioningConfiguration"].(map[string]any)["Status"] != "Enabled" || b["ObjectLockEnabled"] != "true" ||
		lock["Rule"].(map[string]any)["DefaultRetention"].(map[string]any)["Mode"] != "COMPLIANCE" {
		t.Errorf("archive bucket: versioning %v, object lock %v", b["VersioningConfiguration"], lock)
	}
	alarm := res["DepthAlarm"].(map[string]any)["Properties"].(map[string]any)
	if alarm["MetricName"] != "ApproximateNumberOfMessagesVisible" || alarm["Namespace"] != "AWS/SQS" {
		t.Errorf("alarm on %v %v", alarm["Namespace"], alarm["MetricName"])
	}
}

// packaged returns the functions infra/package.sh builds (its `for fn in` list).
func packaged(t *testing.T) map[string]bool {
	b, err := os.ReadFile("package.sh")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^for fn in ([a-z ]+); do`).FindSubmatch(b)
	if m == nil {
		t.Fatal("package.sh: no `for fn in ...; do` line")
	}
	out := map[string]bool{}
	for _, f := range strings.Fields(string(m[1])) {
		out[f] = true
	}
	return out
}

// noResourceLevel are the actions that take no resource ARN (IAM service
// authorization reference): they may, and must, use Resource "*". Any other
// action on "*" needs a Condition scoping it (e.g. a request tag).
var noResourceLevel = map[string]bool{
	"ec2:DescribeSpotPriceHistory": true, "ec2:DescribeCapacityBlockOfferings": true, "ec2:DescribeInstances": true,
	"ec2:DescribeInstanceStatus": true, "ec2:DescribeCapacityReservations": true, "pricing:GetProducts": true,
}

// platform are actions Lambda itself uses with the function's role, not the code.
var platform = map[string]string{
	"sqs:SendMessage": "the on-failure destination of asynchronous invocations (EventInvokeConfig)",
}

// implied are actions IAM requires for a call beyond the call's own action.
var implied = map[string][]string{
	// Tag-on-create (TagSpecifications) is authorised as ec2:CreateTags.
	"ec2:RunInstances":          {"ec2:CreateTags"},
	"ec2:PurchaseCapacityBlock": {"ec2:CreateTags"},
}

// exempt are actions found in a function's code that it is deliberately not
// granted, with why.
var exempt = map[string]map[string]string{
	"*": {
		"dynamodb:CreateTable": "ledger.CreateDynamoTable serves tests and the CLI; the stack creates the table",
	},
	"drain": {
		"ec2:RunInstances": "placing is burst only", "ec2:PurchaseCapacityBlock": "placing is burst only",
		"ec2:DescribeCapacityReservations": "capacity blocks are found by burst (resume) and reconcile; drain terminates instances",
		"ec2:DescribeSpotPriceHistory":     "quotes are fetched only by a burst decision", "ec2:DescribeCapacityBlockOfferings": "quotes: burst only",
		"pricing:GetProducts": "quotes: burst only", "sqs:GetQueueUrl": "live depth: burst only", "sqs:GetQueueAttributes": "live depth: burst only",
	},
	"reconcile": {
		"ec2:RunInstances": "placing is burst only", "ec2:PurchaseCapacityBlock": "placing is burst only",
		"ec2:DescribeSpotPriceHistory": "quotes are fetched only by a burst decision", "ec2:DescribeCapacityBlockOfferings": "quotes: burst only",
		"pricing:GetProducts": "quotes: burst only", "sqs:GetQueueUrl": "live depth: burst only", "sqs:GetQueueAttributes": "live depth: burst only",
	},
}

// iamAction maps an SDK operation to the IAM actions it needs.
func iamAction(svc, op string, txItems []string) []string {
	switch {
	case svc == "dynamodb" && op == "TransactWriteItems":
		return txItems // permissions are those of each item's own action
	case svc == "dynamodb" && op == "TransactGetItems":
		return []string{"dynamodb:GetItem"}
	case svc == "s3" && op == "ListObjectsV2":
		return []string{"s3:ListBucket"}
	case svc == "s3" && op == "HeadObject":
		return []string{"s3:GetObject"}
	}
	return []string{svc + ":" + op}
}

const sdkService = "github.com/aws/aws-sdk-go-v2/service/"

// codeActions lists the IAM actions of every AWS SDK operation referenced
// (by its <Op>Input type) in the module's packages that fn's main depends on,
// with the files that reference it.
func codeActions(t *testing.T, fn string) map[string][]string {
	t.Helper()
	cmd := exec.Command("go", "list", "-e", "-deps", "-f", `{{.ImportPath}}|{{.Dir}}|{{join .GoFiles ","}}`, "./functions/"+fn)
	cmd.Dir = ".."
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	found := map[string][]string{}
	fset := token.NewFileSet()
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		parts := strings.Split(line, "|")
		if !strings.HasPrefix(parts[0], "github.com/sluicehq/sluice") || parts[2] == "" {
			continue
		}
		for _, name := range strings.Split(parts[2], ",") {
			path := filepath.Join(parts[1], name)
			f, err := parser.ParseFile(fset, path, nil, parser.SkipObjectResolution)
			if err != nil {
				t.Fatal(err)
			}
			svcOf := map[string]string{}   // import name -> service
			typesOf := map[string]string{} // import name of <svc>/types -> service
			for _, imp := range f.Imports {
				p, _ := strconv.Unquote(imp.Path.Value)
				if !strings.HasPrefix(p, sdkService) {
					continue
				}
				rest := strings.TrimPrefix(p, sdkService)
				svc, sub, _ := strings.Cut(rest, "/")
				local := filepath.Base(p)
				if imp.Name != nil {
					local = imp.Name.Name
				}
				switch sub {
				case "":
					svcOf[local] = svc
				case "types":
					typesOf[local] = svc
				}
			}
			var ops [][2]string
			var tx []string
			ast.Inspect(f, func(n ast.Node) bool {
				switch x := n.(type) {
				case *ast.SelectorExpr:
					id, ok := x.X.(*ast.Ident)
					if !ok {
						return true
					}
					if svc, ok := svcOf[id.Name]; ok && strings.HasSuffix(x.Sel.Name, "Input") && x.Sel.Name != "Input" {
						ops = append(ops, [2]string{svc, strings.TrimSuffix(x.Sel.Name, "Input")})
					}
					if svc, ok := typesOf[id.Name]; ok && svc == "dynamodb" {
						switch x.Sel.Name {
						case "Put":
							tx = append(tx, "dynamodb:PutItem")
						case "Update":
							tx = append(tx, "dynamodb:UpdateItem")
						case "Delete":
							tx = append(tx, "dynamodb:DeleteItem")
						case "ConditionCheck":
							tx = append(tx, "dynamodb:ConditionCheckItem")
						}
					}
				}
				return true
			})
			rel := strings.TrimPrefix(parts[0], "github.com/sluicehq/sluice") + "/" + name
			for _, o := range ops {
				for _, a := range iamAction(o[0], o[1], tx) {
					if !slices.Contains(found[a], rel) {
						found[a] = append(found[a], rel)
					}
				}
			}
		}
	}
	return found
}

// resolveIf keeps the true branch of every !If and drops AWS::NoValue: the
// policy as deployed with every optional feature on.
func resolveIf(v any) any {
	switch x := v.(type) {
	case map[string]any:
		if c, ok := x["!If"].([]any); ok && len(c) == 3 {
			return resolveIf(c[1])
		}
		out := map[string]any{}
		for k, e := range x {
			out[k] = resolveIf(e)
		}
		return out
	case []any:
		var out []any
		for _, e := range x {
			r := resolveIf(e)
			if m, ok := r.(map[string]any); ok && m["!Ref"] == "AWS::NoValue" {
				continue
			}
			out = append(out, r)
		}
		return out
	}
	return v
}

func strs(v any) []string {
	switch x := v.(type) {
	case string:
		return []string{x}
	case []any:
		var out []string
		for _, e := range x {
			out = append(out, strs(e)...)
		}
		return out
	}
	return []string{"<not a string>"}
}

func TestIAMLeastPrivilege(t *testing.T) {
	tpl := loadTemplate(t)
	res := tpl["Resources"].(map[string]any)
	for name, r := range res {
		r := r.(map[string]any)
		if r["Type"] != "AWS::Serverless::Function" {
			continue
		}
		p := r["Properties"].(map[string]any)
		fn := strings.TrimSuffix(filepath.Base(p["CodeUri"].(string)), ".zip")
		t.Run(fn, func(t *testing.T) {
			granted := map[string]bool{}
			for _, pol := range resolveIf(p["Policies"]).([]any) {
				doc, ok := pol.(map[string]any)
				if !ok || doc["Statement"] == nil {
					t.Fatalf("%s: policy %v is not an inline document (SAM policy templates are too broad to check)", name, pol)
				}
				for _, st := range doc["Statement"].([]any) {
					st := st.(map[string]any)
					if st["Effect"] != "Allow" || st["NotAction"] != nil || st["NotResource"] != nil {
						t.Errorf("statement %v: only Allow with Action and Resource", st["Sid"])
					}
					actions := strs(st["Action"])
					resources := strs(st["Resource"])
					for _, a := range actions {
						if strings.Contains(a, "*") {
							t.Errorf("statement %v: wildcard action %s", st["Sid"], a)
						}
						granted[a] = true
						if slices.Contains(resources, "*") && !noResourceLevel[a] && st["Condition"] == nil {
							t.Errorf("statement %v: %s on Resource \"*\" (it supports resource ARNs)", st["Sid"], a)
						}
					}
				}
			}
			code := codeActions(t, fn)
			for a, files := range code {
				for _, extra := range implied[a] {
					if _, ok := code[extra]; !ok && (exempt["*"][a]+exempt[fn][a]) == "" {
						code[extra] = append([]string{"(implied by " + a + ")"}, files...)
					}
				}
			}
			for a, files := range code {
				if granted[a] {
					continue
				}
				if why := exempt["*"][a] + exempt[fn][a]; why == "" {
					t.Errorf("the code calls %s (%s) but %s's policy does not allow it", a, strings.Join(files, ", "), name)
				}
			}
			for a := range granted {
				if _, ok := code[a]; !ok && platform[a] == "" {
					t.Errorf("%s's policy allows %s, which no code of functions/%s calls", name, a, fn)
				}
			}
			for _, ex := range []map[string]string{exempt["*"], exempt[fn]} {
				for a := range ex {
					if _, ok := code[a]; !ok {
						t.Errorf("stale exemption %s: functions/%s does not call it", a, fn)
					}
					if granted[a] {
						t.Errorf("%s is exempt for %s but granted", a, fn)
					}
				}
			}
			if testing.Verbose() {
				t.Logf("%s: code calls %d actions, policy grants %d", fn, len(code), len(granted))
			}
		})
	}
}
