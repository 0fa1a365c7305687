// SPDX-License-Identifier: Apache-2.0
// helm_template renders a Helm chart the way `helm template` does, for the offline chart check
// (scripts/check_kubernetes.py) on machines without Helm: Go's text/template with the sprig
// functions and Helm's own include, tpl (without the named templates), required, toYaml, fromYaml and fail; .Values (the
// chart's values.yaml, then each -f file, then each --set, merged), .Release and .Chart. No
// subcharts, hooks, .Files or .Capabilities: the chart in deploy/helm/warpscope uses none.
//
//	helm_template [--name NAME] [--namespace NS] [-f VALUES.yaml]... [--set a.b=v]... CHART_DIR
//
// Build offline with Debian's Go packages:
//
//	GO111MODULE=off GOPATH=/usr/share/gocode go build -o helm_template scripts/helm_template/main.go
package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"text/template"

	"github.com/Masterminds/sprig"
	yaml2 "gopkg.in/yaml.v2"
	yaml3 "gopkg.in/yaml.v3"
)

type values = map[string]interface{}

func die(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "helm_template: "+format+"\n", args...)
	os.Exit(1)
}

func readYAML(path string) values {
	data, err := os.ReadFile(path)
	if err != nil {
		die("%v", err)
	}
	v := values{}
	if err := yaml3.Unmarshal(data, &v); err != nil {
		die("%s: %v", path, err)
	}
	return v
}

// merge lays src over dst: maps merge key by key, anything else (lists too) replaces, and a
// null deletes the key (as Helm does).
func merge(dst, src values) values {
	for k, sv := range src {
		if sv == nil {
			delete(dst, k)
			continue
		}
		if sm, ok := sv.(values); ok {
			if dm, ok := dst[k].(values); ok {
				dst[k] = merge(dm, sm)
				continue
			}
		}
		dst[k] = sv
	}
	return dst
}

// setValue applies one --set a.b.c=v: true/false, integers and null are typed, the rest strings.
func setValue(v values, assignment string) {
	eq := strings.IndexByte(assignment, '=')
	if eq <= 0 {
		die("--set %q: expected key.path=value", assignment)
	}
	keys := strings.Split(assignment[:eq], ".")
	raw := assignment[eq+1:]
	var val interface{} = raw
	if raw == "true" || raw == "false" {
		val = raw == "true"
	} else if raw == "null" {
		val = nil
	} else if n, err := strconv.ParseInt(raw, 10, 64); err == nil {
		val = int(n)
	}
	m := v
	for _, k := range keys[:len(keys)-1] {
		next, ok := m[k].(values)
		if !ok {
			next = values{}
			m[k] = next
		}
		m = next
	}
	m[keys[len(keys)-1]] = val
}

func toYAML(v interface{}) string {
	data, err := yaml2.Marshal(v)
	if err != nil {
		return ""
	}
	return strings.TrimSuffix(string(data), "\n")
}

func fromYAML(s string) values {
	v := values{}
	if err := yaml3.Unmarshal([]byte(s), &v); err != nil {
		v["Error"] = err.Error()
	}
	return v
}

func main() {
	name, namespace := "release-name", "default"
	var files, sets []string
	var chartDir string
	args := os.Args[1:]
	for i := 0; i < len(args); i++ {
		next := func() string {
			if i+1 >= len(args) {
				die("%s needs a value", args[i])
			}
			i++
			return args[i]
		}
		switch args[i] {
		case "--name":
			name = next()
		case "--namespace", "-n":
			namespace = next()
		case "-f", "--values":
			files = append(files, next())
		case "--set":
			sets = append(sets, next())
		default:
			if strings.HasPrefix(args[i], "-") || chartDir != "" {
				die("unknown argument %q (usage: helm_template [--name N] [--namespace NS] "+
					"[-f FILE]... [--set k=v]... CHART_DIR)", args[i])
			}
			chartDir = args[i]
		}
	}
	if chartDir == "" {
		die("no chart directory given")
	}
	chart := readYAML(filepath.Join(chartDir, "Chart.yaml"))
	vals := readYAML(filepath.Join(chartDir, "values.yaml"))
	for _, f := range files {
		vals = merge(vals, readYAML(f))
	}
	for _, s := range sets {
		setValue(vals, s)
	}
	top := map[string]interface{}{
		"Values": vals,
		"Release": map[string]interface{}{
			"Name": name, "Namespace": namespace, "Service": "Helm", "IsInstall": true,
			"IsUpgrade": false, "Revision": 1,
		},
		"Chart": map[string]interface{}{
			"Name": chart["name"], "Version": chart["version"], "AppVersion": chart["appVersion"],
		},
	}

	root := template.New("chart").Option("missingkey=zero")
	funcs := sprig.TxtFuncMap()
	funcs["toYaml"] = toYAML
	funcs["fromYaml"] = fromYAML
	funcs["required"] = func(msg string, v interface{}) (interface{}, error) {
		if v == nil || v == "" {
			return nil, fmt.Errorf("%s", msg)
		}
		return v, nil
	}
	funcs["fail"] = func(msg string) (string, error) { return "", fmt.Errorf("%s", msg) }
	funcs["include"] = func(name string, data interface{}) (string, error) {
		var buf bytes.Buffer
		err := root.ExecuteTemplate(&buf, name, data)
		return buf.String(), err
	}
	// tpl renders a string from the values; it sees the functions but not the named templates.
	funcs["tpl"] = func(text string, data interface{}) (string, error) {
		t, err := template.New("tpl").Option("missingkey=zero").Funcs(funcs).Parse(text)
		if err != nil {
			return "", err
		}
		var buf bytes.Buffer
		err = t.Execute(&buf, data)
		return buf.String(), err
	}
	root.Funcs(funcs)

	paths, _ := filepath.Glob(filepath.Join(chartDir, "templates", "*"))
	sort.Strings(paths)
	var rendered []string
	chartName := fmt.Sprint(chart["name"])
	for _, p := range paths {
		data, err := os.ReadFile(p)
		if err != nil {
			die("%v", err)
		}
		tname := chartName + "/templates/" + filepath.Base(p)
		if _, err := root.New(tname).Parse(string(data)); err != nil {
			die("%v", err)
		}
		base := filepath.Base(p)
		if !strings.HasPrefix(base, "_") && (strings.HasSuffix(base, ".yaml") || strings.HasSuffix(base, ".yml")) {
			rendered = append(rendered, tname)
		}
	}
	var out bytes.Buffer
	for _, tname := range rendered {
		var buf bytes.Buffer
		if err := root.ExecuteTemplate(&buf, tname, top); err != nil {
			die("%v", err)
		}
		text := strings.ReplaceAll(buf.String(), "<no value>", "")
		if strings.TrimSpace(text) == "" {
			continue
		}
		fmt.Fprintf(&out, "---\n# Source: %s\n%s\n", tname, strings.TrimSpace(text))
	}
	os.Stdout.Write(out.Bytes())
}
