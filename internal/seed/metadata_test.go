package seed

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"gopkg.in/yaml.v3"
)

func TestMetaData(t *testing.T) {
	t.Parallel()
	cases := map[string]struct {
		seed Seed
		want string
	}{
		"identity only": {
			seed: Seed{InstanceID: "web-0", Hostname: "web-0"},
			want: "instance-id: \"web-0\"\nlocal-hostname: \"web-0\"\n",
		},
		"metadata sorted by key after identity": {
			seed: Seed{InstanceID: "db-1", Hostname: "db-1", Metadata: map[string]string{
				"zone": "b", "Role": "primary", "app.tier": "data", "_x": "1",
			}},
			want: "instance-id: \"db-1\"\nlocal-hostname: \"db-1\"\n" +
				"Role: \"primary\"\n_x: \"1\"\napp.tier: \"data\"\nzone: \"b\"\n",
		},
		"values that YAML would retype or break stay strings": {
			seed: Seed{InstanceID: "i", Hostname: "h", Metadata: map[string]string{
				"a": "yes", "b": "012", "c": "", "d": "x: y # z", "e": "&anchor", "f": "null",
			}},
			want: "instance-id: \"i\"\nlocal-hostname: \"h\"\n" +
				"a: \"yes\"\nb: \"012\"\nc: \"\"\nd: \"x: y # z\"\ne: \"&anchor\"\nf: \"null\"\n",
		},
		"backslash, quote and controls escaped": {
			seed: Seed{InstanceID: "i", Hostname: "h", Metadata: map[string]string{
				"k": "a\\b\"c\nd\te\r\x00\x07\x1b\x7f\u0085\u2028\u2029\ufeff\u00e9",
			}},
			want: "instance-id: \"i\"\nlocal-hostname: \"h\"\n" +
				`k: "a\\b\"c\nd\te\r\0\a\e\x7F\N\L\P\uFEFF` + "\u00e9\"\n",
		},
		"invalid UTF-8 becomes U+FFFD": {
			seed: Seed{InstanceID: "i", Hostname: "h", Metadata: map[string]string{"k": "a\xffb"}},
			want: "instance-id: \"i\"\nlocal-hostname: \"h\"\nk: \"a\ufffdb\"\n",
		},
		"keys outside the plain set or readable as another type are quoted": {
			seed: Seed{InstanceID: "i", Hostname: "h", Metadata: map[string]string{
				"a b": "1", "a:b": "2", "1x": "3", "-x": "4", ".x": "5", "yes": "6", "Null": "7", "": "8",
				"k\"q": "9", "ok-key_1.2": "10",
			}},
			want: "instance-id: \"i\"\nlocal-hostname: \"h\"\n" +
				"\"\": \"8\"\n\"-x\": \"4\"\n\".x\": \"5\"\n\"1x\": \"3\"\n\"Null\": \"7\"\n" +
				"\"a b\": \"1\"\n\"a:b\": \"2\"\n\"k\\\"q\": \"9\"\nok-key_1.2: \"10\"\n\"yes\": \"6\"\n",
		},
		"identity keys in metadata do not override the member's identity": {
			seed: Seed{InstanceID: "web-0", Hostname: "web-0", Metadata: map[string]string{
				"instance-id": "other", "local-hostname": "other", "role": "web",
			}},
			want: "instance-id: \"web-0\"\nlocal-hostname: \"web-0\"\nrole: \"web\"\n",
		},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			if d := cmp.Diff(c.want, string(c.seed.MetaData())); d != "" {
				t.Errorf("meta-data (-want +got):\n%s", d)
			}
		})
	}
}

// TestMetaDataParses reads meta-data back with a YAML parser: whatever the keys and values, the document
// must parse to exactly the identity plus the metadata.
func TestMetaDataParses(t *testing.T) {
	t.Parallel()
	cases := map[string]map[string]string{
		"none":     nil,
		"plain":    {"role": "web", "zone": "eu-1"},
		"retyping": {"a": "yes", "b": "012", "c": "~", "d": "1e3", "yes": "no", "1": "2", "true": "false"},
		"syntax":   {"a: b": "c: d", "[x]": "{y}", "#": "# not a comment", "*ref": "&anchor", "!tag": "|", "'": "\""},
		"escapes":  {"k\\": "a\\b\"c", "lines": "a\nb\r\nc\u0085d\u2028e\u2029", "ctl": "\x00\x01\x08\t\x0b\x0c\x1b\x7f\u0080\u009f"},
		"unicode":  {"é": "ü", "emoji": "\U0001F600", "bom": "\ufeffx", "spaces": "  padded  "},
	}
	for name, metadata := range cases {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s := Seed{InstanceID: "id-0", Hostname: "host-0", Metadata: metadata}
			var got map[string]string
			if err := yaml.Unmarshal(s.MetaData(), &got); err != nil {
				t.Fatalf("meta-data does not parse: %v\n%s", err, s.MetaData())
			}
			want := map[string]string{"instance-id": "id-0", "local-hostname": "host-0"}
			for k, v := range metadata {
				want[k] = v
			}
			if d := cmp.Diff(want, got); d != "" {
				t.Errorf("parsed meta-data (-want +got):\n%s\ndocument:\n%s", d, s.MetaData())
			}
		})
	}
}
