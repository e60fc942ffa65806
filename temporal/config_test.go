package temporal

import (
	"errors"
	"strings"
	"testing"
)

func TestConfigValidateRefusesHalfFilledConfiguration(t *testing.T) {
	t.Parallel()
	ok := Config{Address: "localhost:7233", Namespace: "default"}
	cases := []struct {
		name   string
		mutate func(*Config)
		want   string // a phrase the refusal must contain; empty means accepted
	}{
		{"a plain local configuration is accepted", func(c *Config) {}, ""},
		{"an API key over TLS is accepted", func(c *Config) { c.APIKey = "k"; c.TLS = true }, ""},
		{"an API key alone implies TLS and is accepted", func(c *Config) { c.APIKey = "k" }, ""},
		{"mTLS with certificate and key is accepted", func(c *Config) { c.CertFile = "c.pem"; c.KeyFile = "k.pem" }, ""},
		{"no address is refused", func(c *Config) { c.Address = "" }, "no Temporal address"},
		{"a blank address is refused", func(c *Config) { c.Address = "  " }, "no Temporal address"},
		{"no namespace is refused", func(c *Config) { c.Namespace = "" }, "no Temporal namespace"},
		{"an API key with TLS disabled is refused", func(c *Config) { c.APIKey = "k"; c.TLSDisabled = true }, "plaintext"},
		{"an API key and a client certificate together are refused", func(c *Config) { c.APIKey = "k"; c.CertFile = "c.pem"; c.KeyFile = "k.pem" }, "choose one"},
		{"a certificate without its key is refused", func(c *Config) { c.CertFile = "c.pem" }, "without its key"},
		{"a key without its certificate is refused", func(c *Config) { c.KeyFile = "k.pem" }, "without its certificate"},
		{"skipped host verification is refused", func(c *Config) { c.TLS = true; c.DisableHostVerification = true }, "host verification"},
		{"TLS files with TLS disabled are refused", func(c *Config) { c.TLSDisabled = true; c.CAFile = "ca.pem" }, "TLS is disabled"},
		{"a namespace with whitespace is refused", func(c *Config) { c.Namespace = "de fault" }, "whitespace"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c := ok
			tc.mutate(&c)
			err := c.Validate()
			if tc.want == "" {
				if err != nil {
					t.Fatalf("Validate() = %v, want nil", err)
				}
				return
			}
			if err == nil {
				t.Fatalf("Validate() = nil, want a refusal containing %q", tc.want)
			}
			if !errors.Is(err, ErrConfig) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Validate() = %v, want ErrConfig containing %q", err, tc.want)
			}
		})
	}
}

func TestAPIKeyNeverTravelsInPlaintext(t *testing.T) {
	t.Parallel()
	c := Config{Address: "a:1", Namespace: "n", APIKey: "k"}
	if !c.usesTLS() {
		t.Fatal("an API key without an explicit TLS setting must turn TLS on")
	}
	tlsCfg, err := c.tlsConfig()
	if err != nil || tlsCfg == nil {
		t.Fatalf("tlsConfig() = %v, %v; want a TLS configuration", tlsCfg, err)
	}
}
