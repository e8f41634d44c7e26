package env_test

import (
	"os"
	"testing"

	"github.com/go-logr/logr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
)

// testLogger is discarded unless CAPTF_ENV_LOG is set, which sends the
// in-process components' logs to stderr.
var testLogger = logr.Discard()

func TestMain(m *testing.M) {
	if os.Getenv("CAPTF_ENV_LOG") != "" {
		testLogger = zap.New(zap.UseDevMode(true), zap.WriteTo(os.Stderr))
	}
	ctrl.SetLogger(testLogger)
	os.Exit(m.Run())
}
