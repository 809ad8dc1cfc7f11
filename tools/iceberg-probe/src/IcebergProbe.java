// Plans the data files of an Iceberg table's current snapshot for filters, as Java Iceberg
// (the library Spark, Trino and Flink plan with) prunes manifests and files: the second
// pruning reader of deltabus's UniForm tests.
//
// Usage: java -cp 'lib/*:classes' IcebergProbe <metadata.json path>
// stdin: a JSON array of {"name", "column", "op", "values"}; op is eq, ne, lt, le, gt, ge,
// in, notin, isnull, notnull or startswith; values are strings, converted to the column's
// type (numbers and booleans parsed; dates, timestamps and decimals as Iceberg's string
// literals convert). stdout: one JSON object, filter name -> the file paths planned.
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import org.apache.iceberg.BaseTable;
import org.apache.iceberg.FileScanTask;
import org.apache.iceberg.Files;
import org.apache.iceberg.StaticTableOperations;
import org.apache.iceberg.Table;
import org.apache.iceberg.expressions.Expression;
import org.apache.iceberg.expressions.Expressions;
import org.apache.iceberg.io.CloseableIterable;
import org.apache.iceberg.io.FileIO;
import org.apache.iceberg.io.InputFile;
import org.apache.iceberg.io.OutputFile;
import org.apache.iceberg.types.Type;

public class IcebergProbe {
  /** Local files only, `file:` URLs or paths. */
  public static class LocalIO implements FileIO {
    private static String path(String location) {
      return location.startsWith("file:") ? java.net.URI.create(location).getPath() : location;
    }

    @Override
    public InputFile newInputFile(String location) {
      return Files.localInput(new File(path(location)));
    }

    @Override
    public OutputFile newOutputFile(String location) {
      throw new UnsupportedOperationException("read only");
    }

    @Override
    public void deleteFile(String location) {
      throw new UnsupportedOperationException("read only");
    }

    @Override
    public Map<String, String> properties() {
      return Map.of();
    }
  }

  private static Object value(Type type, String v) {
    switch (type.typeId()) {
      case INTEGER:
        return Integer.parseInt(v);
      case LONG:
        return Long.parseLong(v);
      case FLOAT:
        return Float.parseFloat(v);
      case DOUBLE:
        return Double.parseDouble(v);
      case BOOLEAN:
        return Boolean.parseBoolean(v);
      default:
        return v;
    }
  }

  private static Expression filter(Table table, JsonNode f) {
    String column = f.get("column").asText();
    Type type = table.schema().findType(column);
    List<Object> values = new ArrayList<>();
    for (JsonNode v : f.get("values")) {
      values.add(value(type, v.asText()));
    }
    Object v = values.isEmpty() ? null : values.get(0);
    switch (f.get("op").asText()) {
      case "eq": return Expressions.equal(column, v);
      case "ne": return Expressions.notEqual(column, v);
      case "lt": return Expressions.lessThan(column, v);
      case "le": return Expressions.lessThanOrEqual(column, v);
      case "gt": return Expressions.greaterThan(column, v);
      case "ge": return Expressions.greaterThanOrEqual(column, v);
      case "in": return Expressions.in(column, values.toArray());
      case "notin": return Expressions.notIn(column, values.toArray());
      case "isnull": return Expressions.isNull(column);
      case "notnull": return Expressions.notNull(column);
      case "startswith": return Expressions.startsWith(column, (String) v);
      default: throw new IllegalArgumentException("unknown op " + f.get("op"));
    }
  }

  public static void main(String[] args) throws Exception {
    ObjectMapper json = new ObjectMapper();
    JsonNode filters = json.readTree(System.in);
    Table table = new BaseTable(new StaticTableOperations(args[0], new LocalIO()), "uniform");
    ObjectNode out = json.createObjectNode();
    for (JsonNode f : filters) {
      ArrayNode files = out.putArray(f.get("name").asText());
      try (CloseableIterable<FileScanTask> tasks = table.newScan().filter(filter(table, f)).planFiles()) {
        for (FileScanTask t : tasks) {
          files.add(t.file().location());
        }
      }
    }
    System.out.println(json.writeValueAsString(out));
  }
}
