package dev.dlock.fencing;

import dev.dlock.annotation.FencingToken;
import jakarta.persistence.Column;
import jakarta.persistence.Entity;
import jakarta.persistence.Id;
import jakarta.persistence.Table;

/** A test entity whose row keeps the last fencing token it accepted. */
@Entity
@Table(name = "fenced_account")
public class FencedAccount {

    @Id
    private long id;

    private long balance;

    @FencingToken
    @Column(name = "fence_token")
    private long fenceToken;

    /** For JPA. */
    protected FencedAccount() {
    }

    /** The balance. */
    public long balance() {
        return balance;
    }

    /** Sets the balance. */
    public void balance(long balance) {
        this.balance = balance;
    }

    /** The token this copy of the row was loaded (or fenced) with. */
    public long fenceToken() {
        return fenceToken;
    }
}
