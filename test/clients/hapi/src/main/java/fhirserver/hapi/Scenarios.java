package fhirserver.hapi;

import ca.uhn.fhir.context.FhirContext;
import ca.uhn.fhir.rest.api.MethodOutcome;
import ca.uhn.fhir.rest.client.api.IGenericClient;
import ca.uhn.fhir.rest.client.api.ServerValidationModeEnum;
import ca.uhn.fhir.rest.client.interceptor.BearerTokenAuthInterceptor;
import ca.uhn.fhir.rest.gclient.StringClientParam;
import ca.uhn.fhir.rest.server.exceptions.BaseServerResponseException;
import ca.uhn.fhir.util.BundleUtil;
import java.util.ArrayList;
import java.util.Date;
import java.util.List;
import java.util.UUID;
import org.hl7.fhir.instance.model.api.IBase;
import org.hl7.fhir.instance.model.api.IBaseBundle;
import org.hl7.fhir.instance.model.api.IBaseConformance;
import org.hl7.fhir.instance.model.api.IBaseResource;
import org.hl7.fhir.instance.model.api.IPrimitiveType;

/**
 * The HAPI FHIR generic client, as a user would call it, against one server in DSTU2, STU3 and R4.
 * Resources are written as JSON and parsed with the version's strict parser, so the same scenarios
 * serve all three structure packages. Prints one line per scenario, `PASS <version> <name>` or
 * `FAIL <version> <name>: <reason>`, and exits 0 when the run itself completed.
 *
 * Usage: java -Duser.timezone=UTC fhirserver.hapi.Scenarios <server-url> <bearer-token> [versions…]
 */
public final class Scenarios {
  private final String version;
  private final FhirContext ctx;
  private final IGenericClient client;
  private final Class<? extends IBaseBundle> bundleClass;
  private final String family = "Hapi" + UUID.randomUUID().toString().replace("-", "").substring(0, 10);

  @SuppressWarnings("unchecked")
  private Scenarios(String version, FhirContext ctx, String base, String token) {
    this.version = version;
    this.ctx = ctx;
    // the server's answers must parse strictly: an unknown code or element is an error, not a warning
    ctx.setParserErrorHandler(new ca.uhn.fhir.parser.StrictErrorHandler());
    ctx.getRestfulClientFactory().setServerValidationMode(ServerValidationModeEnum.NEVER);
    this.client = ctx.newRestfulGenericClient(base + "/" + version);
    client.registerInterceptor(new BearerTokenAuthInterceptor(token));
    this.bundleClass = (Class<? extends IBaseBundle>) ctx.getResourceDefinition("Bundle").getImplementingClass();
  }

  public static void main(String[] args) {
    String base = args[0];
    String token = args[1];
    List<String> versions = args.length > 2 ? List.of(args).subList(2, args.length) : List.of("dstu2", "stu3", "r4");
    for (String version : versions) {
      FhirContext ctx =
          switch (version) {
            case "dstu2" -> FhirContext.forDstu2();
            case "stu3" -> FhirContext.forDstu3();
            case "r4" -> FhirContext.forR4();
            default -> throw new IllegalArgumentException("unknown version " + version);
          };
      new Scenarios(version, ctx, base, token).runAll();
    }
  }

  private interface Scenario {
    void run() throws Exception;
  }

  private void scenario(String name, Scenario body) {
    try {
      body.run();
      System.out.println("PASS " + version + " " + name);
    } catch (Throwable e) {
      String reason = e.getMessage() == null ? e.toString() : e.getMessage();
      if (e instanceof BaseServerResponseException server) {
        reason = server.getStatusCode() + " " + reason + " " + server.getResponseBody();
      }
      System.out.println("FAIL " + version + " " + name + ": " + reason.replace('\n', ' '));
    }
    System.out.flush();
  }

  private void runAll() {
    String[] id = new String[1];
    Date before = new Date(System.currentTimeMillis() - 60_000);
    scenario("create", () -> {
      MethodOutcome outcome = client.create().resource(parse(patientJson())).execute();
      check(Boolean.TRUE.equals(outcome.getCreated()), "not created");
      id[0] = outcome.getId().getIdPart();
      check(id[0] != null, "no id in Location");
    });
    scenario("read", () -> {
      IBaseResource patient = client.read().resource("Patient").withId(id[0]).execute();
      check(patient.getIdElement().getIdPart().equals(id[0]), "wrong id " + patient.getIdElement());
      check(text(patient, "Patient.name.family").contains(family), "family not read back");
      check("1".equals(patient.getMeta().getVersionId()), "versionId " + patient.getMeta().getVersionId());
    });
    scenario("search", () -> {
      IBaseBundle bundle =
          client
              .search()
              .forResource("Patient")
              .where(new StringClientParam("family").matches().value(family))
              .returnBundle(bundleClass)
              .execute();
      List<IBaseResource> found = BundleUtil.toListOfResources(ctx, bundle);
      check(found.size() == 1, found.size() + " Patients found, expected 1");
    });
    scenario("transaction", () -> {
      IBaseBundle response = client.transaction().withBundle((IBaseBundle) parse(transactionJson())).execute();
      List<String> statuses = texts(response, "Bundle.entry.response.status");
      check(statuses.size() == 2 && statuses.stream().allMatch(s -> s.startsWith("201")), "statuses " + statuses);
      List<String> locations = texts(response, "Bundle.entry.response.location");
      check(locations.size() == 2, "locations " + locations);
      IBaseResource observation = client.read().resource("Observation").withUrl(locations.get(1)).execute();
      String subject = text(observation, "Observation.subject.reference");
      check(locations.get(0).startsWith(subject), "Observation.subject " + subject + " not the new Patient");
    });
    scenario("validate-valid", () -> {
      MethodOutcome outcome = client.validate().resource(parse(patientJson())).execute();
      List<String> severities = texts(outcome.getOperationOutcome(), "OperationOutcome.issue.severity");
      check(!severities.contains("error") && !severities.contains("fatal"), "issues " + severities);
    });
    scenario("validate-invalid", () -> {
      // Observation without the required status and code (HAPI's parser itself refuses unknown
      // elements, so the client cannot send one: the server's unknown-element check is tested in
      // test/generated-resources and the validation specs)
      String raw =
          "{\"resourceType\":\"Observation\",\"subject\":{\"reference\":\"Patient/" + id[0] + "\"}}";
      IBaseResource outcome;
      try {
        outcome = client.validate().resource(raw).execute().getOperationOutcome();
      } catch (BaseServerResponseException e) {
        outcome = e.getOperationOutcome();
      }
      check(outcome != null, "no OperationOutcome");
      String issues = String.join(" | ", texts(outcome, "OperationOutcome.issue.diagnostics"));
      check(texts(outcome, "OperationOutcome.issue.severity").contains("error"), "no error: " + issues);
      for (String expected : List.of("status", "code")) {
        check(issues.contains(expected), "no issue about " + expected + ": " + issues);
      }
    });
    scenario("history-since", () -> {
      // HAPI sends _since=…+00:00 with the '+' unescaped (a space to the server)
      IBaseBundle bundle =
          client
              .history()
              .onInstance(ctx.getVersion().newIdType().setValue("Patient/" + id[0]))
              .returnBundle(bundleClass)
              .since(before)
              .execute();
      check(BundleUtil.toListOfResources(ctx, bundle).size() == 1, "expected one version");
    });
    scenario("capabilities", () -> {
      @SuppressWarnings("unchecked")
      Class<? extends IBaseConformance> type =
          (Class<? extends IBaseConformance>)
              ctx.getResourceDefinition(version.equals("dstu2") ? "Conformance" : "CapabilityStatement")
                  .getImplementingClass();
      IBaseResource statement = client.capabilities().ofType(type).execute();
      check(!texts(statement, type.getSimpleName() + ".rest.resource.type").isEmpty(), "no resources listed");
    });
  }

  private IBaseResource parse(String json) {
    return ctx.newJsonParser().parseResource(json);
  }

  private String patientJson() {
    // DSTU2 HumanName.family repeats (https://hl7.org/fhir/DSTU2/datatypes.html#HumanName)
    String familyJson = version.equals("dstu2") ? "[\"" + family + "\"]" : "\"" + family + "\"";
    return "{\"resourceType\":\"Patient\",\"name\":[{\"family\":" + familyJson + ",\"given\":[\"Ann\"]}],"
        + "\"gender\":\"female\",\"birthDate\":\"1970-01-02\"}";
  }

  private String transactionJson() {
    String patientUrl = "urn:uuid:" + UUID.randomUUID();
    return "{\"resourceType\":\"Bundle\",\"type\":\"transaction\",\"entry\":["
        + "{\"fullUrl\":\"" + patientUrl + "\",\"resource\":" + patientJson() + ","
        + "\"request\":{\"method\":\"POST\",\"url\":\"Patient\"}},"
        + "{\"fullUrl\":\"urn:uuid:" + UUID.randomUUID() + "\",\"resource\":{\"resourceType\":\"Observation\","
        + "\"status\":\"final\",\"code\":{\"text\":\"weight\"},\"subject\":{\"reference\":\"" + patientUrl + "\"},"
        + "\"valueQuantity\":{\"value\":70,\"unit\":\"kg\",\"system\":\"http://unitsofmeasure.org\",\"code\":\"kg\"}},"
        + "\"request\":{\"method\":\"POST\",\"url\":\"Observation\"}}]}";
  }

  private List<String> texts(IBase element, String path) {
    List<String> out = new ArrayList<>();
    for (IBase value : ctx.newTerser().getValues(element, path)) {
      if (value instanceof IPrimitiveType<?> primitive) out.add(primitive.getValueAsString());
    }
    return out;
  }

  private String text(IBase element, String path) {
    return String.join(",", texts(element, path));
  }

  private static void check(boolean condition, String message) {
    if (!condition) throw new AssertionError(message);
  }
}
