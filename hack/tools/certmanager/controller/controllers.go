package main

import (
	challenges "github.com/cert-manager/cert-manager/pkg/controller/acmechallenges"
	orders "github.com/cert-manager/cert-manager/pkg/controller/acmeorders"
	shimgateway "github.com/cert-manager/cert-manager/pkg/controller/certificate-shim/gateways"
	shimingress "github.com/cert-manager/cert-manager/pkg/controller/certificate-shim/ingresses"
	cracme "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/acme"
	crapprover "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/approver"
	crca "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/ca"
	crselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/selfsigned"
	crvault "github.com/cert-manager/cert-manager/pkg/controller/certificaterequests/vault"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/issuing"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/keymanager"
	certificatesmetrics "github.com/cert-manager/cert-manager/pkg/controller/certificates/metrics"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/readiness"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/requestmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/revisionmanager"
	"github.com/cert-manager/cert-manager/pkg/controller/certificates/trigger"
	csracme "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/acme"
	csrca "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/ca"
	csrselfsigned "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/selfsigned"
	csrvault "github.com/cert-manager/cert-manager/pkg/controller/certificatesigningrequests/vault"
	"github.com/cert-manager/cert-manager/pkg/controller/clusterissuers"
	"github.com/cert-manager/cert-manager/pkg/controller/issuers"

	// The issuer types the Issuer and ClusterIssuer controllers set up.
	_ "github.com/cert-manager/cert-manager/pkg/issuer/acme"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/ca"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/selfsigned"
	_ "github.com/cert-manager/cert-manager/pkg/issuer/vault"
)

// The controller sets match cert-manager's release, less the Venafi issuer
// and its two request controllers: Venafi's client library is not served
// by the Go module proxy. An Issuer with a venafi section is reported as an
// unknown issuer type.
var (
	// defaultControllers is what '*' stands for in --controllers.
	defaultControllers = []string{
		issuers.ControllerName,
		clusterissuers.ControllerName,
		certificatesmetrics.ControllerName,
		shimingress.ControllerName,
		orders.ControllerName,
		challenges.ControllerName,
		cracme.CRControllerName,
		crapprover.ControllerName,
		crca.CRControllerName,
		crselfsigned.CRControllerName,
		crvault.CRControllerName,
		trigger.ControllerName,
		issuing.ControllerName,
		keymanager.ControllerName,
		requestmanager.ControllerName,
		readiness.ControllerName,
		revisionmanager.ControllerName,
	}

	// csrControllers sign Kubernetes CertificateSigningRequests; they run
	// when the ExperimentalCertificateSigningRequestControllers gate is on.
	csrControllers = []string{
		csracme.CSRControllerName,
		csrca.CSRControllerName,
		csrselfsigned.CSRControllerName,
		csrvault.CSRControllerName,
	}

	// gatewayShim runs when the Gateway API support is on.
	gatewayShim = shimgateway.ControllerName

	// clusterScoped controllers do not run when --namespace limits the
	// controller to one namespace.
	clusterScoped = append([]string{clusterissuers.ControllerName}, csrControllers...)

	allControllers = append(append(append([]string{}, defaultControllers...), csrControllers...), gatewayShim)
)
