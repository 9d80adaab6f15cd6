// The harness of the README's JDBC recipe (Orders.java, written from the README by
// pgrx-tests/checks/readme/clients.py): calls it as an application would and prints what it got, in the
// client's own type (long), for clients.py to compare with what the server stored. JSON through
// Jackson, Debian's libjackson2-databind-java.
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

public class Check {
    public static void main(String[] args) throws Exception {
        try (Connection c = DriverManager.getConnection(System.getenv("CLIENT_JDBC_URL"))) {
            Orders.createTable(c);
            long orderId = Orders.insertOne(c, "book");
            List<String> items = new ArrayList<>();
            for (int n = 0; n < 1000; n++) items.add("item " + n);
            long[] ids = Orders.insertMany(c, items);
            if (ids.length != items.size()) throw new AssertionError("one id per item: " + ids.length);
            System.out.println("type long");
            System.out.println("row " + orderId + " book");
            for (int n = 0; n < ids.length; n++) System.out.println("row " + ids[n] + " " + items.get(n));
            // A JSON round trip through Jackson (Debian's libjackson2-databind-java), as a long.
            ObjectMapper json = new ObjectMapper();
            JsonNode back = json.readTree(json.writeValueAsString(Map.of("id", orderId)));
            if (!back.get("id").isLong()) throw new AssertionError("Jackson read the id as " + back.get("id").getNodeType());
            System.out.println("json " + back.get("id").longValue());
            // The server's JSON (snowflake_to_jsonb: the id as a string), parsed by Jackson.
            try (PreparedStatement ps = c.prepareStatement("SELECT snowflake_to_jsonb(?)::text")) {
                ps.setLong(1, orderId);
                try (ResultSet r = ps.executeQuery()) {
                    r.next();
                    System.out.println("browser " + Long.parseLong(json.readTree(r.getString(1)).get("id").textValue()));
                }
            }
        }
    }
}
