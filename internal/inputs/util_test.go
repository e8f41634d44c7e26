package inputs

import (
	"encoding/json"
	"errors"
)

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }

func jsonNumber(s string) any { return json.Number(s) }
