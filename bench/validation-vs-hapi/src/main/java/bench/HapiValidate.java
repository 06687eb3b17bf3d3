package bench;

import ca.uhn.fhir.context.FhirContext;
import ca.uhn.fhir.context.support.DefaultProfileValidationSupport;
import ca.uhn.fhir.validation.FhirValidator;
import ca.uhn.fhir.validation.SingleValidationMessage;
import ca.uhn.fhir.validation.ValidationResult;
import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import org.hl7.fhir.common.hapi.validation.support.CommonCodeSystemsTerminologyService;
import org.hl7.fhir.common.hapi.validation.support.InMemoryTerminologyServerValidationSupport;
import org.hl7.fhir.common.hapi.validation.support.SnapshotGeneratingValidationSupport;
import org.hl7.fhir.common.hapi.validation.support.ValidationSupportChain;
import org.hl7.fhir.common.hapi.validation.validator.FhirInstanceValidator;

/**
 * Reads one resource per line (NDJSON) on stdin and writes one JSON line per resource on stdout:
 * {"i":n,"ms":t,"issues":[{"severity","location","messageId","message"}]}. The validation support chain
 * is the one the issue names: base definitions, in-memory terminology, common code systems, snapshots.
 */
public final class HapiValidate {
  public static void main(String[] args) throws Exception {
    // First argument: the FHIR version of the corpus, r4 (default) or stu3.
    FhirContext ctx = args.length > 0 && args[0].equals("stu3") ? FhirContext.forDstu3() : FhirContext.forR4();
    ValidationSupportChain chain = new ValidationSupportChain(
        new DefaultProfileValidationSupport(ctx),
        new InMemoryTerminologyServerValidationSupport(ctx),
        new CommonCodeSystemsTerminologyService(ctx),
        new SnapshotGeneratingValidationSupport(ctx));
    FhirInstanceValidator module = new FhirInstanceValidator(chain);
    FhirValidator validator = ctx.newValidator();
    validator.registerValidatorModule(module);
    PrintStream out = new PrintStream(System.out, false, StandardCharsets.UTF_8);
    BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
    String line;
    int i = 0;
    while ((line = in.readLine()) != null) {
      if (line.isBlank()) continue;
      long start = System.nanoTime();
      StringBuilder json = new StringBuilder();
      json.append("{\"i\":").append(i++).append(",\"issues\":[");
      try {
        ValidationResult result = validator.validateWithResult(line);
        boolean first = true;
        for (SingleValidationMessage m : result.getMessages()) {
          if (!first) json.append(',');
          first = false;
          json.append("{\"severity\":").append(quote(m.getSeverity().getCode()))
              .append(",\"location\":").append(quote(m.getLocationString()))
              .append(",\"messageId\":").append(quote(m.getMessageId()))
              .append(",\"message\":").append(quote(m.getMessage())).append('}');
        }
      } catch (Exception e) {
        json.append("{\"severity\":\"fatal\",\"location\":\"\",\"messageId\":\"exception\",\"message\":")
            .append(quote(String.valueOf(e))).append('}');
      }
      json.append("],\"ms\":").append((System.nanoTime() - start) / 1_000_000.0).append('}');
      out.println(json);
      out.flush();
    }
  }

  private static String quote(String s) {
    if (s == null) return "null";
    StringBuilder b = new StringBuilder("\"");
    for (char c : s.toCharArray()) {
      switch (c) {
        case '"' -> b.append("\\\"");
        case '\\' -> b.append("\\\\");
        case '\n' -> b.append("\\n");
        case '\r' -> b.append("\\r");
        case '\t' -> b.append("\\t");
        default -> {
          if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
          else b.append(c);
        }
      }
    }
    return b.append('"').toString();
  }
}
